import Ajv from "ajv";
import addFormats from "ajv-formats";
import type { FastifyInstance, FastifySchema, FastifySchemaValidationError } from "fastify";
import { INT32_MAX } from "../core/shapes.ts";
import { registerInputGuards } from "./input-guards.ts";
import { lazyValidator, type Validate } from "./lazy-schemas.ts";

function makeAjv(coerce: boolean) {
  const ajv = new Ajv.default({
    coerceTypes: coerce ? "array" : false,
    useDefaults: true,
    removeAdditional: true,
    allErrors: true,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

interface JsonSchema {
  type?: string | string[];
  maximum?: number;
  properties?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

const INTEGER_TEXT = /^-?[0-9]+$/;
const NUMBER_TEXT = /^-?[0-9]+(\.[0-9]+)?$/;

/** "integer", "number" or undefined: what a text parameter must spell, looking through unions. */
function numericKind(
  s: JsonSchema | undefined,
): { kind: "integer" | "number"; bounded: boolean } | undefined {
  if (!s) return undefined;
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.includes("integer")) return { kind: "integer", bounded: s.maximum !== undefined };
  if (types.includes("number")) return { kind: "number", bounded: s.maximum !== undefined };
  for (const branch of [...(s.anyOf ?? []), ...(s.oneOf ?? [])]) {
    const found = numericKind(branch);
    if (found) return found;
  }
  return undefined;
}

/** The problem with one text value of a numeric parameter, before Ajv coerces it. */
function numericTextProblem(raw: string, kind: "integer" | "number", bounded: boolean): string | null {
  if (!(kind === "integer" ? INTEGER_TEXT : NUMBER_TEXT).test(raw)) {
    return kind === "integer"
      ? "must be an integer written in plain decimal digits"
      : "must be a number written in plain decimal digits";
  }
  // Without a stated maximum, PostgreSQL's integer range is the bound: larger values cannot be used.
  if (!bounded && Math.abs(Number(raw)) > INT32_MAX) return `must be at most ${INT32_MAX} in magnitude`;
  return null;
}

/**
 * Query strings, path parameters and headers are text that Ajv coerces; its coercion takes any
 * text JavaScript reads as a number (`0x10`, ` 5`, `1e3`). Numeric parameters must be plain
 * decimal digits instead, and a query parameter sent in array form (`limit[]=1`) is refused
 * rather than silently ignored.
 */
function strictText(schema: JsonSchema, httpPart: string | undefined, validate: Validate): Validate {
  const properties = schema.properties ?? {};
  const numeric = Object.entries(properties).flatMap(([name, s]) => {
    const kind = numericKind(s);
    return kind ? [{ name, ...kind }] : [];
  });
  const checkBrackets = httpPart === "querystring";
  if (numeric.length === 0 && !checkBrackets) return validate;
  const wrapped: Validate = (data, ctx) => {
    const errors: FastifySchemaValidationError[] = [];
    if (typeof data === "object" && data !== null) {
      const values = data as Record<string, unknown>;
      for (const { name, kind, bounded } of numeric) {
        const value = values[name];
        const texts = Array.isArray(value) ? value : [value];
        for (const text of texts) {
          if (typeof text !== "string") continue;
          const message = numericTextProblem(text, kind, bounded);
          if (message) {
            errors.push({ keyword: "type", instancePath: `/${name}`, schemaPath: "", message, params: {} });
            break;
          }
        }
      }
      if (checkBrackets) {
        for (const key of Object.keys(values)) {
          const base = key.split("[")[0] ?? key;
          if (base !== key && base in properties) {
            errors.push({
              keyword: "type",
              instancePath: `/${base}`,
              schemaPath: "",
              message: `must be sent as ${base}=value; the array form ${key} is not accepted`,
              params: {},
            });
          }
        }
      }
    }
    if (errors.length > 0) {
      wrapped.errors = errors;
      return false;
    }
    const ok = validate(data, ctx);
    wrapped.errors = validate.errors;
    return ok;
  };
  wrapped.schemaEnv = validate.schemaEnv;
  return wrapped;
}

/**
 * Bodies are validated without type coercion: with coercion, `null` in a nullable field would
 * silently become "" or 0 and PATCH could not tell "leave as is" from a value. Query strings,
 * path parameters and headers arrive as text and are coerced, strictly (see strictText).
 * NUL bytes and other text PostgreSQL cannot store are refused first (input-guards.ts).
 */
export function registerValidation(app: FastifyInstance): void {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  // Compiled on first use (lazy-schemas.ts): start-up does not pay for every route's schemas.
  app.setValidatorCompiler(({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) =>
    lazyValidator(() => {
      if (httpPart === "body") return strict.compile(schema as object) as Validate;
      return strictText(schema as JsonSchema, httpPart, coercing.compile(schema as object) as Validate);
    }),
  );
  registerInputGuards(app);
}
