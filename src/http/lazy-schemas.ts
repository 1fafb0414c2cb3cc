import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import type { FastifySchemaValidationError } from "fastify";

/**
 * Route schemas compiled on first use instead of all at start: Fastify compiles every route's
 * validators (Ajv) and response serializers (fast-json-stringify) while it boots, which was about
 * half of the start-up time, for routes most processes never serve. Each is compiled once, on the
 * first request that needs it, and kept.
 */

export type Validate = ((data: unknown, ctx?: unknown) => boolean) & {
  errors?: FastifySchemaValidationError[] | null;
  schemaEnv?: unknown;
};

/**
 * A validator that compiles itself on its first call. `schemaEnv` is set so that Fastify passes the
 * parent object, letting Ajv replace a root value it coerces or fills with defaults.
 */
export function lazyValidator(compile: () => Validate): Validate {
  let compiled: Validate | undefined;
  const validate: Validate = (data, ctx) => {
    compiled ??= compile();
    const ok = compiled(data, ctx);
    validate.errors = compiled.errors;
    return ok;
  };
  validate.schemaEnv = true;
  return validate;
}

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** Fastify's own serializer factory, each route's serializer built on its first response. */
export const lazySerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const compileRoute = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => {
      serialize ??= compileRoute(route);
      return serialize(doc);
    };
  };
};
