import Ajv from "ajv";
import addFormats from "ajv-formats";
import type { FastifyInstance, FastifySchema } from "fastify";

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

/**
 * Bodies are validated without type coercion: with coercion, `null` in a nullable field would
 * silently become "" or 0 and PATCH could not tell "leave as is" from a value. Query strings,
 * path parameters and headers arrive as text and are coerced.
 */
export function registerValidation(app: FastifyInstance): void {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) =>
    (httpPart === "body" ? strict : coercing).compile(schema as object),
  );
}
