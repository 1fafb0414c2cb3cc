/** The malformed values the fuzz test sends (JSON values, whole bodies, query and path text), and its seeded generator. */

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
export const NESTED = new Set([
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
export const BAD_BODIES: [string, string][] = [
  ["null body", "null"],
  ["array body", "[]"],
  ["string body", '"x"'],
  ["number body", "1e400"],
  ["deep array body", DEEP_ARRAY],
  ["deep object body", DEEP_OBJECT],
  ["NUL key", '{"\\u0000":1}'],
];

/** Query values, already URL-encoded. */
export const BAD_QUERY_VALUES = [
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
export function badPathValues(rand: () => number): string[] {
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

export const BAD_CONTENT_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "application/json; charset=utf-16",
  "application/jsonx",
  "*/*",
];
