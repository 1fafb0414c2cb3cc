/**
 * Malformed requests derived from an OpenAPI document: every operation, every parameter and every
 * body property gets wrong types, nulls, NUL bytes, huge numbers and strings, deep nesting and bad
 * content types. Deterministic: the only randomness is a seeded generator.
 */

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

/** mulberry32: a tiny seeded generator, so every run sends the same requests. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function seededUuid(rand: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16)).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

const DEEP_ARRAY = `${"[".repeat(200)}${"]".repeat(200)}`;
const DEEP_OBJECT = `${'{"a":'.repeat(200)}1${"}".repeat(200)}`;
const LONG = JSON.stringify("x".repeat(10_000));

/** Raw JSON texts put in place of one value (raw, so that `1e400` and deep nesting survive). */
export const BAD_JSON_VALUES: [string, string][] = [
  ["null", "null"],
  ["zero", "0"],
  ["negative", "-1"],
  ["fraction", "1.5"],
  ["overflow double", "1e400"],
  ["negative overflow double", "-1e400"],
  ["beyond bigint", "99999999999999999999"],
  ["beyond int4", "2147483648"],
  ["below int4", "-2147483649"],
  ["beyond safe integer", "9007199254740993"],
  ["boolean", "true"],
  ["string", '"x"'],
  ["empty string", '""'],
  ["NUL string", '"\\u0000"'],
  ["embedded NUL", '"a\\u0000b"'],
  ["lone surrogate", '"\\ud800"'],
  ["10k string", LONG],
  ["bad date", '"2026-13-45T99:99:99Z"'],
  ["empty array", "[]"],
  ["array of null", "[null]"],
  ["array of NUL", '["\\u0000"]'],
  ["empty object", "{}"],
  ["proto object", '{"__proto__":{"polluted":1}}'],
  ["deep array", DEEP_ARRAY],
  ["deep object", DEEP_OBJECT],
];

/** Fewer values for nested properties, one of each kind, to keep the run to a few thousand requests. */
const NESTED = new Set([
  "null",
  "beyond int4",
  "string",
  "NUL string",
  "lone surrogate",
  "10k string",
  "empty object",
  "deep array",
]);

/** Whole bodies that are not what any route expects. */
const BAD_BODIES: [string, string][] = [
  ["null body", "null"],
  ["array body", "[]"],
  ["string body", '"x"'],
  ["number body", "1e400"],
  ["deep array body", DEEP_ARRAY],
  ["deep object body", DEEP_OBJECT],
  ["NUL key", '{"\\u0000":1}'],
];

/** Query values, already URL-encoded. */
const BAD_QUERY_VALUES = [
  "",
  "%00",
  "a%00b",
  "0x10",
  "%205",
  "5%20",
  "1e3",
  "-1",
  "1.5",
  "99999999999999999999",
  "-99999999999999999999",
  "2147483648",
  "9007199254740993",
  "NaN",
  "Infinity",
  "true",
  "null",
  "%FF",
  "%",
  ",,,",
  "a,%00",
  "x".repeat(10_000),
];

/** Path segments, already URL-encoded. */
function badPathValues(rand: () => number): string[] {
  return [
    "not-a-uuid",
    "%00",
    "a%00b",
    `${seededUuid(rand)}%00`,
    seededUuid(rand),
    "00000000-0000-0000-0000-000000000000",
    "x".repeat(3000),
    "%FF",
    "%25",
    "..",
    "'%20OR%201=1",
    "99999999999999999999",
  ];
}

const BAD_CONTENT_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "application/json; charset=utf-16",
  "application/jsonx",
  "*/*",
];

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
