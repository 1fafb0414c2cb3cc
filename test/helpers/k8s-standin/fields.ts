// Server-side apply's field ownership, as the API server keeps it in metadata.managedFields. Lists
// are owned whole (the real server merges some by key, e.g. containers by name; one manager per
// field, which is what the listener and kubectl produce, behaves the same).

export type Obj = Record<string, unknown>;
export type Path = string[];

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Fields no manager owns: identity, bookkeeping and (for status-subresource kinds) status. */
const UNOWNED = new Set(["apiVersion", "kind"]);
const UNOWNED_META = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "managedFields",
  "deletionTimestamp",
]);

/** Every leaf path of `obj` (an object with no keys and a list are leaves). */
export function leafPaths(obj: Obj, skipStatus: boolean): Path[] {
  const out: Path[] = [];
  const walk = (value: unknown, path: Path) => {
    if (isObj(value) && Object.keys(value).length > 0) {
      for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    } else {
      out.push(path);
    }
  };
  for (const [k, v] of Object.entries(obj)) {
    if (UNOWNED.has(k) || (skipStatus && k === "status")) continue;
    if (k === "metadata" && isObj(v)) {
      for (const [mk, mv] of Object.entries(v)) if (!UNOWNED_META.has(mk)) walk(mv, ["metadata", mk]);
      continue;
    }
    walk(v, [k]);
  }
  return out;
}

export const key = (p: Path) => JSON.stringify(p);

export function getAt(obj: unknown, path: Path): unknown {
  let cur = obj;
  for (const part of path) {
    if (!isObj(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

export function setAt(obj: Obj, path: Path, value: unknown): void {
  let cur = obj;
  for (const part of path.slice(0, -1)) {
    if (!isObj(cur[part])) cur[part] = {};
    cur = cur[part] as Obj;
  }
  const last = path[path.length - 1];
  if (last !== undefined) cur[last] = structuredClone(value);
}

/** Removes the field at `path` and the objects it leaves empty. */
export function deleteAt(obj: Obj, path: Path): void {
  const parents: Obj[] = [];
  let cur = obj;
  for (const part of path.slice(0, -1)) {
    const next = cur[part];
    if (!isObj(next)) return;
    parents.push(cur);
    cur = next;
  }
  const last = path[path.length - 1];
  if (last === undefined) return;
  delete cur[last];
  for (let i = path.length - 2; i >= 0; i--) {
    const parent = parents[i];
    const part = path[i];
    if (!parent || part === undefined) break;
    const child = parent[part];
    if (isObj(child) && Object.keys(child).length === 0) delete parent[part];
    else break;
  }
}

/** FieldsV1 (`{"f:spec":{"f:replicas":{}}}`) of a set of paths, as managedFields shows them. */
export function fieldsV1(paths: Path[]): Obj {
  const root: Obj = {};
  for (const p of paths) {
    let cur = root;
    for (const part of p) {
      const k = `f:${part}`;
      if (!isObj(cur[k])) cur[k] = {};
      cur = cur[k] as Obj;
    }
  }
  return root;
}

/** Paths `a` and `b` overlap when one is a prefix of the other. */
export function overlaps(a: Path, b: Path): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Deep equality of JSON values. */
export function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return structuredClone(patch);
  const out: Obj = isObj(target) ? structuredClone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
