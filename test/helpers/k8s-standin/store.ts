// Why over 300 lines: server-side apply, update ownership and commit share the managers' bookkeeping.
// Objects in memory with the API server's rules for writes: server-side apply with field managers
// and conflicts, create/update/patch, the status subresource, generation and resourceVersion,
// schema validation (the official schemas, as the real server validates), and watch events.
import { randomUUID } from "node:crypto";
import { KNOWN_KINDS, validateManifest } from "../k8s-models.ts";
import { applyDefaults, checkRules, InvalidObject, immutableChange } from "./defaults.ts";
import {
  deleteAt,
  fieldsV1,
  getAt,
  key,
  leafPaths,
  mergePatch,
  type Obj,
  overlaps,
  type Path,
  same,
  setAt,
} from "./fields.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { parseSelector } from "./selectors.ts";

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Obj,
  ) {
    super(message);
  }
}

interface Manager {
  operation: "Apply" | "Update";
  paths: Path[];
  time: string;
}

interface Stored {
  type: ResourceType;
  obj: Obj;
  /** Keyed by `manager\0operation`, as the server keeps one entry per manager and operation. */
  managers: Map<string, Manager>;
}

export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: Obj;
  rv: number;
  resource: ResourceType;
}

export interface Query {
  labelSelector: string | null;
  fieldSelector: string | null;
}

const meta = (o: Obj) => (o.metadata ?? {}) as Obj;
const objKey = (t: ResourceType, ns: string | undefined, name: string) =>
  `${apiVersionOf(t)}/${t.kind}/${ns ?? ""}/${name}`;

/** What changes an object's generation: everything but metadata and status. */
const specPart = (o: Obj) => {
  const { metadata: _m, status: _s, ...rest } = o;
  return rest;
};

export class ObjectStore {
  private readonly objects = new Map<string, Stored>();
  private readonly history: WatchEvent[] = [];
  private readonly watchers = new Set<(e: WatchEvent) => void>();
  private rv = 1;

  get resourceVersion(): number {
    return this.rv;
  }

  get(t: ResourceType, ns: string | undefined, name: string): Obj {
    const s = this.objects.get(objKey(t, ns, name));
    if (!s)
      throw new ApiError(404, "NotFound", `${t.plural}.${t.group || "core"} "${name}" not found`, {
        name,
        kind: t.plural,
      });
    return structuredClone(s.obj);
  }

  list(t: ResourceType, ns: string | undefined, q: Query): Obj[] {
    const matches = this.matcher(t, ns, q);
    return [...this.objects.values()].filter((s) => matches(s.obj)).map((s) => structuredClone(s.obj));
  }

  /** Server-side apply: `config` becomes what `manager` owns; conflicts with other managers → 409 unless forced. */
  apply(
    t: ResourceType,
    ns: string | undefined,
    name: string,
    config: Obj,
    manager: string,
    force: boolean,
    dryRun: boolean,
  ): { obj: Obj; created: boolean } {
    this.checkIdentity(t, ns, name, config);
    const existing = this.objects.get(objKey(t, ns, name));
    const live: Obj = existing
      ? structuredClone(existing.obj)
      : { apiVersion: apiVersionOf(t), kind: t.kind, metadata: { name, ...(ns ? { namespace: ns } : {}) } };
    const managers = new Map(existing?.managers ?? []);
    const wanted = leafPaths(config, t.statusSubresource);
    const conflicts: { manager: string; path: Path }[] = [];
    for (const [id, m] of managers) {
      if (id === `${manager}\0Apply`) continue;
      for (const p of m.paths) {
        const clash = wanted.find((w) => overlaps(w, p) && !same(getAt(config, w), getAt(live, w)));
        if (clash) conflicts.push({ manager: id.split("\0")[0] ?? id, path: clash });
      }
    }
    if (conflicts.length && !force) {
      const causes = conflicts.map((c) => ({
        reason: "FieldManagerConflict",
        message: `conflict with "${c.manager}": .${c.path.join(".")}`,
        field: `.${c.path.join(".")}`,
      }));
      throw new ApiError(
        409,
        "Conflict",
        `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? "" : "s"}: ${causes.map((c) => c.message).join("; ")}`,
        { name, kind: t.plural, causes },
      );
    }
    for (const [id, m] of managers) {
      if (id === `${manager}\0Apply`) continue;
      managers.set(id, { ...m, paths: m.paths.filter((p) => !wanted.some((w) => overlaps(w, p))) });
    }
    const previous = managers.get(`${manager}\0Apply`)?.paths ?? [];
    const ownedByOthers = [...managers]
      .filter(([id]) => id !== `${manager}\0Apply`)
      .flatMap(([, m]) => m.paths);
    for (const p of previous) {
      const kept = wanted.some((w) => overlaps(w, p)) || ownedByOthers.some((o) => overlaps(o, p));
      if (!kept) deleteAt(live, p);
    }
    for (const p of wanted) setAt(live, p, getAt(config, p));
    const before = managers.get(`${manager}\0Apply`);
    const time = before && same(before.paths, wanted) ? before.time : new Date().toISOString();
    managers.set(`${manager}\0Apply`, { operation: "Apply", paths: wanted, time });
    return { obj: this.commit(t, ns, name, live, existing, managers, dryRun, false), created: !existing };
  }

  create(t: ResourceType, ns: string | undefined, body: Obj, manager: string, dryRun: boolean): Obj {
    const name = String(meta(body).name ?? "");
    this.checkIdentity(t, ns, name, body);
    if (this.objects.has(objKey(t, ns, name)))
      throw new ApiError(409, "AlreadyExists", `${t.plural} "${name}" already exists`, {
        name,
        kind: t.plural,
      });
    const obj = structuredClone(body);
    if (t.statusSubresource) delete obj.status;
    return this.commit(
      t,
      ns,
      name,
      obj,
      undefined,
      this.updateOwnership(new Map(), manager, obj, {}, t),
      dryRun,
      false,
    );
  }

  /** PUT (whole object) or a JSON merge patch, on the object or its `status`. */
  update(
    t: ResourceType,
    ns: string | undefined,
    name: string,
    change: { replace?: Obj; merge?: unknown },
    manager: string,
    dryRun: boolean,
    status: boolean,
  ): Obj {
    const existing = this.objects.get(objKey(t, ns, name));
    if (!existing)
      throw new ApiError(404, "NotFound", `${t.plural} "${name}" not found`, { name, kind: t.plural });
    let next = change.replace
      ? structuredClone(change.replace)
      : (mergePatch(existing.obj, change.merge) as Obj);
    const rvSent = meta(next).resourceVersion;
    if (change.replace && rvSent !== undefined && rvSent !== meta(existing.obj).resourceVersion) {
      throw new ApiError(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${t.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    if (status) next = { ...structuredClone(existing.obj), status: next.status };
    else if (t.statusSubresource) next = { ...next, status: existing.obj.status };
    this.checkIdentity(t, ns, name, next);
    const managers = status
      ? new Map(existing.managers)
      : this.updateOwnership(new Map(existing.managers), manager, next, existing.obj, t);
    return this.commit(t, ns, name, next, existing, managers, dryRun, status);
  }

  delete(t: ResourceType, ns: string | undefined, name: string, dryRun: boolean): Obj {
    const k = objKey(t, ns, name);
    const existing = this.objects.get(k);
    if (!existing)
      throw new ApiError(404, "NotFound", `${t.plural} "${name}" not found`, { name, kind: t.plural });
    if (dryRun) return structuredClone(existing.obj);
    this.objects.delete(k);
    const obj = structuredClone(existing.obj);
    meta(obj).resourceVersion = String(++this.rv);
    this.emit({ type: "DELETED", object: obj, rv: this.rv, resource: t });
    return obj;
  }

  /** Events after `since` (or ADDED for every current match), then live ones; returns the unsubscribe. */
  watch(
    t: ResourceType,
    ns: string | undefined,
    q: Query,
    since: number | undefined,
    send: (e: WatchEvent) => void,
  ): () => void {
    const matches = this.matcher(t, ns, q);
    const relevant = (e: WatchEvent) => e.resource === t && matches(e.object);
    if (since === undefined) {
      for (const s of this.objects.values())
        if (s.type === t && matches(s.obj))
          send({ type: "ADDED", object: structuredClone(s.obj), rv: this.rv, resource: t });
    } else {
      for (const e of this.history) if (e.rv > since && relevant(e)) send(e);
    }
    const listener = (e: WatchEvent) => {
      if (relevant(e)) send(e);
    };
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  private matcher(t: ResourceType, ns: string | undefined, q: Query): (o: Obj) => boolean {
    const labels = parseSelector(q.labelSelector);
    const fields = parseSelector(q.fieldSelector);
    return (o) => {
      const m = meta(o);
      if (o.kind !== t.kind || o.apiVersion !== apiVersionOf(t)) return false;
      if (ns !== undefined && m.namespace !== ns) return false;
      const flat = { "metadata.name": String(m.name), "metadata.namespace": String(m.namespace ?? "") };
      return labels((m.labels ?? {}) as Record<string, string>) && fields(flat);
    };
  }

  private checkIdentity(t: ResourceType, ns: string | undefined, name: string, body: Obj): void {
    const m = meta(body);
    if (body.kind !== t.kind || body.apiVersion !== apiVersionOf(t)) {
      throw new ApiError(
        400,
        "BadRequest",
        `the body is a ${String(body.apiVersion)} ${String(body.kind)}, not a ${apiVersionOf(t)} ${t.kind}`,
      );
    }
    if (m.name !== name)
      throw new ApiError(
        400,
        "BadRequest",
        `the name of the object (${String(m.name)}) does not match the name on the URL (${name})`,
      );
    if (ns !== undefined && m.namespace !== undefined && m.namespace !== ns) {
      throw new ApiError(
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    }
    if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name)) {
      throw new ApiError(
        422,
        "Invalid",
        `${t.kind} "${name}" is invalid: metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
      );
    }
  }

  /** An Update (create, PUT, merge patch) takes the fields whose values it changed, from anyone. */
  private updateOwnership(
    managers: Map<string, Manager>,
    manager: string,
    next: Obj,
    prev: Obj,
    t: ResourceType,
  ): Map<string, Manager> {
    const changed = leafPaths(next, t.statusSubresource).filter((p) => !same(getAt(next, p), getAt(prev, p)));
    if (changed.length === 0) return managers;
    for (const [id, m] of managers)
      managers.set(id, { ...m, paths: m.paths.filter((p) => !changed.some((c) => overlaps(c, p))) });
    const id = `${manager}\0Update`;
    const mine = managers.get(id)?.paths ?? [];
    managers.set(id, {
      operation: "Update",
      paths: [...mine.filter((p) => !changed.some((c) => key(c) === key(p))), ...changed],
      time: new Date().toISOString(),
    });
    return managers;
  }

  private commit(
    t: ResourceType,
    ns: string | undefined,
    name: string,
    obj: Obj,
    existing: Stored | undefined,
    managers: Map<string, Manager>,
    dryRun: boolean,
    statusWrite: boolean,
  ): Obj {
    const m = meta(obj);
    const old = existing ? meta(existing.obj) : undefined;
    if (KNOWN_KINDS.includes(`${apiVersionOf(t)}/${t.kind}`)) {
      try {
        validateManifest(obj);
      } catch (err) {
        throw new ApiError(
          422,
          "Invalid",
          `${t.kind} "${name}" is invalid: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
    if (!statusWrite) applyDefaults(obj);
    try {
      checkRules(t.kind, name, obj);
    } catch (err) {
      if (err instanceof InvalidObject) throw new ApiError(422, "Invalid", err.message);
      throw err;
    }
    const immutable = existing && !statusWrite ? immutableChange(t.kind, name, obj, existing.obj) : undefined;
    if (immutable) {
      // A refused PVC resize comes from an admission plugin: 403, as on a real server.
      const pvc = t.kind === "PersistentVolumeClaim";
      throw new ApiError(pvc ? 403 : 422, pvc ? "Forbidden" : "Invalid", immutable);
    }
    for (const [id, mm] of managers) if (mm.paths.length === 0) managers.delete(id);
    m.name = name;
    if (ns !== undefined) m.namespace = ns;
    m.uid = old?.uid ?? randomUUID();
    m.creationTimestamp = old?.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const gen = Number(old?.generation ?? 0);
    m.generation = !existing
      ? 1
      : !statusWrite && !same(specPart(obj), specPart(existing.obj))
        ? gen + 1
        : gen;
    m.managedFields = [...managers].map(([id, mm]) => ({
      manager: id.split("\0")[0],
      operation: mm.operation,
      apiVersion: apiVersionOf(t),
      time: mm.time.replace(/\.\d+Z$/, "Z"),
      fieldsType: "FieldsV1",
      fieldsV1: fieldsV1(mm.paths),
    }));
    const unchanged =
      existing && same({ ...obj, metadata: { ...m, resourceVersion: old?.resourceVersion } }, existing.obj);
    m.resourceVersion =
      unchanged || dryRun ? String(old?.resourceVersion ?? this.rv + 1) : String(this.rv + 1);
    if (dryRun || unchanged) return structuredClone(obj);
    this.rv++;
    this.objects.set(objKey(t, ns, name), { type: t, obj: structuredClone(obj), managers });
    this.emit({
      type: existing ? "MODIFIED" : "ADDED",
      object: structuredClone(obj),
      rv: this.rv,
      resource: t,
    });
    return structuredClone(obj);
  }

  private emit(e: WatchEvent): void {
    this.history.push(e);
    // Compacted as etcd is: a watch from an older resourceVersion sees only the recent events.
    if (this.history.length > 20_000) this.history.splice(0, this.history.length - 10_000);
    for (const w of this.watchers) w(e);
  }
}
