import type { FastifyInstance } from "fastify";
import { type FieldProblem, FieldsInvalid } from "../core/errors.ts";

/** Deeper than any body of this API; deeper ones are refused before anything walks them. */
export const MAX_JSON_DEPTH = 32;

const NUL = "\u0000";
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

type Loc = (string | number)[];

/** Arrays and plain objects (parsed JSON, parsed query strings); never buffers or streams. */
function isJsonContainer(v: unknown): v is object {
  if (typeof v !== "object" || v === null) return false;
  if (Array.isArray(v)) return true;
  // Query and path objects are made from a null-prototype class (fast-querystring, find-my-way).
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null || Object.getPrototypeOf(proto) === null;
}

/** Any surrogate: most strings have none, and the lone-surrogate pattern is the slower test. */
const SURROGATE = /[\uD800-\uDFFF]/;

/** Why a string cannot be stored as PostgreSQL text or jsonb, or null. */
function textProblem(s: string): { msg: string; type: string } | null {
  if (s.includes(NUL)) return { msg: "must not contain NUL (\\u0000) characters", type: "string_nul" };
  if (SURROGATE.test(s) && LONE_SURROGATE.test(s))
    return { msg: "must be valid Unicode text", type: "string_unicode" };
  return null;
}

/**
 * Every string (values and keys, at any depth), number and nesting level of a parsed request
 * part: NUL bytes and lone surrogates are refused because PostgreSQL cannot store them in text or
 * jsonb; numbers beyond the safe-integer range lose precision in JavaScript. Iterative, so a
 * deeply nested body cannot exhaust the stack.
 */
export function inputProblems(part: string, value: unknown): FieldProblem[] {
  const items: FieldProblem[] = [];
  const stack: { value: unknown; loc: Loc }[] = [{ value, loc: [part] }];
  while (stack.length > 0 && items.length < 20) {
    const { value: v, loc } = stack.pop() as { value: unknown; loc: Loc };
    if (typeof v === "string") {
      const p = textProblem(v);
      if (p) items.push({ loc, ...p });
    } else if (typeof v === "number") {
      if (!Number.isFinite(v) || Math.abs(v) > Number.MAX_SAFE_INTEGER) {
        items.push({
          loc,
          msg: `must be between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`,
          type: "number_range",
        });
      }
    } else if (isJsonContainer(v)) {
      if (loc.length > MAX_JSON_DEPTH) {
        items.push({ loc, msg: `is nested more than ${MAX_JSON_DEPTH} levels deep`, type: "too_deep" });
        continue;
      }
      const entries: [string | number, unknown][] = Array.isArray(v)
        ? v.map((item, i) => [i, item])
        : Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i] as [string | number, unknown];
        if (typeof key === "string") {
          const p = textProblem(key);
          if (p) {
            items.push({ loc: [...loc, key.replaceAll(NUL, "\\u0000")], msg: `key ${p.msg}`, type: p.type });
            continue;
          }
        }
        stack.push({ value: item, loc: [...loc, key] });
      }
    }
  }
  return items;
}

/**
 * True when `inputProblems` would find nothing, checked without allocating (nearly every request):
 * false sends the part to the full walk, which also names where the problem is.
 */
function plainlyClean(v: unknown, depth: number): boolean {
  if (typeof v === "string") return textProblem(v) === null;
  if (typeof v === "number") return Number.isFinite(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER;
  if (!isJsonContainer(v)) return true;
  if (depth >= MAX_JSON_DEPTH - 1) return false;
  if (Array.isArray(v)) return v.every((item) => plainlyClean(item, depth + 1));
  for (const [key, item] of Object.entries(v)) {
    if (textProblem(key) !== null || !plainlyClean(item, depth + 1)) return false;
  }
  return true;
}

/**
 * Runs before schema validation on every route, those with no schema included: a NUL byte or a
 * lone surrogate anywhere in the path, the query or a JSON body is a 422 naming where it is.
 */
export function registerInputGuards(app: FastifyInstance): void {
  app.addHook("preValidation", (request, _reply, done) => {
    const { params, query, body } = request;
    const checksBody = typeof body === "object" || typeof body === "string";
    if (plainlyClean(params, 0) && plainlyClean(query, 0) && (!checksBody || plainlyClean(body, 0))) {
      return done();
    }
    const items = [
      ...inputProblems("path", params),
      ...inputProblems("query", query),
      ...(checksBody ? inputProblems("body", body) : []),
    ];
    done(items.length > 0 ? new FieldsInvalid(items) : undefined);
  });
}
