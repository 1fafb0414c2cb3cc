/**
 * Malformed requests derived from an OpenAPI document: every operation, every parameter and every
 * body property gets wrong types, nulls, NUL bytes, huge numbers and strings, deep nesting and bad
 * content types. Deterministic: the only randomness is a seeded generator.
 */

import {
  BAD_BODIES,
  BAD_CONTENT_TYPES,
  BAD_JSON_VALUES,
  BAD_QUERY_VALUES,
  badPathValues,
  NESTED,
  seeded,
  seededUuid,
} from "./fuzz-values.ts";

export interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

export interface Operation {
  parameters?: { name: string; in: "path" | "query" | "header"; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
}

export interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  pattern?: string;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  default?: unknown;
}

export interface FuzzRequest {
  /** What is malformed, for the failure report. */
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

export function deref(doc: OpenApiDoc, schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; i < 10 && s.$ref; i++) {
    const name = s.$ref.split("/").pop() ?? "";
    s = doc.components?.schemas?.[name] ?? {};
  }
  return s;
}

const typesOf = (s: Schema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);

const STRING_CANDIDATES = ["fuzz", "fuzz-1", "Fuzz", "a", "fuzz_1", "https://example.com/x", "FUZZ"];

/** A plausible valid value, so that one bad property at a time gets past its neighbours. */
export function sample(doc: OpenApiDoc, schema: Schema | undefined, rand: () => number, depth = 0): unknown {
  const s = deref(doc, schema);
  if (depth > 6) return null;
  if (s.const !== undefined) return s.const;
  if (s.enum && s.enum.length > 0) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const branches = s.anyOf ?? s.oneOf;
  if (branches) {
    const useful = branches.find((b) => !typesOf(deref(doc, b)).includes("null")) ?? branches[0];
    return sample(doc, useful, rand, depth + 1);
  }
  if (s.allOf?.[0]) return sample(doc, s.allOf[0], rand, depth + 1);
  const type = typesOf(s).find((t) => t !== "null") ?? (s.properties ? "object" : "string");
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const name of s.required ?? []) out[name] = sample(doc, s.properties?.[name], rand, depth + 1);
      return out;
    }
    case "array":
      return Array.from({ length: s.minItems ?? 0 }, () => sample(doc, s.items, rand, depth + 1));
    case "integer":
    case "number":
      return s.minimum ?? 1;
    case "boolean":
      return true;
    default: {
      if (s.format === "uuid") return seededUuid(rand);
      if (s.format === "date-time") return "2026-01-01T00:00:00.000Z";
      if (s.format === "uri") return "https://example.com/x";
      const re = s.pattern ? new RegExp(s.pattern, "u") : undefined;
      const found = STRING_CANDIDATES.find((c) => !re || re.test(c)) ?? "fuzz";
      return found.padEnd(s.minLength ?? 0, "x");
    }
  }
}

/** Paths (property names from the root) of every property of an object schema, to a few levels. */
function propertyPaths(doc: OpenApiDoc, schema: Schema | undefined, prefix: string[] = []): string[][] {
  if (prefix.length >= 3) return [];
  const s = deref(doc, schema);
  const objects = [s, ...(s.anyOf ?? []), ...(s.oneOf ?? [])].map((b) => deref(doc, b));
  const out: string[][] = [];
  for (const o of objects) {
    for (const [name, sub] of Object.entries(o.properties ?? {})) {
      const path = [...prefix, name];
      out.push(path);
      out.push(...propertyPaths(doc, sub, path));
    }
  }
  return out;
}

const MARK = "__fuzz_mark__";

/** The baseline body with the value at `path` replaced by raw JSON text. */
function withRaw(base: unknown, path: string[], raw: string): string {
  const copy = JSON.parse(JSON.stringify(base ?? {})) as Record<string, unknown>;
  let node: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== "object" || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1] as string] = MARK;
  return JSON.stringify(copy).replace(`"${MARK}"`, raw);
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? "x");
}

export interface CaseOptions {
  /** Valid values for path parameters, by name (real resources where known). */
  pathValues: Record<string, string>;
  headers: Record<string, string>;
  seed: number;
  /** A valid body where the schema alone cannot make one (rules across fields, real references). */
  baseline?: unknown;
}

/** Every malformed request for one operation. */
export function casesFor(doc: OpenApiDoc, path: string, method: string, op: Operation, opts: CaseOptions) {
  const rand = seeded(opts.seed);
  const M = method.toUpperCase();
  const params = op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === "path");
  const query = params.filter((p) => p.in === "query");
  const base = fill(path, opts.pathValues);
  const json = op.requestBody?.content["application/json"];
  const bodySchema = json ? deref(doc, json.schema) : undefined;
  const baseline = bodySchema ? (opts.baseline ?? sample(doc, bodySchema, rand)) : undefined;
  const jsonHeaders = { ...opts.headers, "content-type": "application/json" };
  const send = (label: string, url: string, payload?: string | Buffer, headers = opts.headers) => ({
    label,
    method: M,
    url,
    headers: payload === undefined ? headers : { ...jsonHeaders, ...headers },
    payload,
  });
  const cases: FuzzRequest[] = [];
  const body = baseline === undefined ? undefined : JSON.stringify(baseline);

  for (const p of pathParams) {
    for (const bad of badPathValues(rand)) {
      const url = fill(path, { ...opts.pathValues, [p.name]: bad });
      cases.push(send(`path ${p.name}=${bad.slice(0, 40)}`, url, body));
    }
  }
  for (const q of query) {
    for (const bad of BAD_QUERY_VALUES) {
      cases.push(send(`query ${q.name}=${bad.slice(0, 40)}`, `${base}?${q.name}=${bad}`));
    }
    cases.push(send(`query ${q.name}[]`, `${base}?${q.name}[]=1`));
    cases.push(send(`query ${q.name}[0]`, `${base}?${q.name}[0]=1`));
    cases.push(send(`query ${q.name} twice`, `${base}?${q.name}=1&${q.name}=2`));
  }
  cases.push(send("unknown query with NUL", `${base}?zz=%00&zz[]=1`));
  for (const header of ["x-tenant-id", "if-match", "if-none-match", "idempotency-key"]) {
    for (const bad of ["not-a-uuid", "x".repeat(5000), '"*"', "W/"]) {
      cases.push(
        send(`header ${header}=${bad.slice(0, 20)}`, base, body, { ...opts.headers, [header]: bad }),
      );
    }
  }
  if (op.requestBody) {
    for (const [label, raw] of BAD_BODIES) cases.push(send(label, base, raw));
    for (const type of BAD_CONTENT_TYPES) {
      cases.push(send(`content-type ${type}`, base, body ?? "{}", { ...opts.headers, "content-type": type }));
    }
    cases.push(send("invalid UTF-8", base, Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])));
    cases.push(send("broken JSON", base, '{"a":'));
  }
  if (bodySchema) {
    const unique = new Map(propertyPaths(doc, bodySchema).map((p) => [p.join("."), p]));
    for (const propPath of unique.values()) {
      const values = propPath.length === 1 ? BAD_JSON_VALUES : BAD_JSON_VALUES.filter(([l]) => NESTED.has(l));
      for (const [label, raw] of values) {
        cases.push(send(`body ${propPath.join(".")}: ${label}`, base, withRaw(baseline, propPath, raw)));
      }
    }
  }
  return cases;
}
