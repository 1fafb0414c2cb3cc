import { type Static, type TSchema, Type } from "@sinclair/typebox";

/** Shapes shared by many resources. */
export const Uuid = Type.String({ format: "uuid" });
export const DateTime = Type.String({ format: "date-time" });
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** A string enum as one JSON Schema `enum` (one clear 422 item instead of a branch per value). */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  opts: { description?: string } = {},
) {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...opts });
}

/**
 * `T | null` as one schema with a type list (and `null` in an enum), not an anyOf: a wrong value
 * gets one 422 item naming the field instead of one per branch, and serializing is cheaper.
 */
export function OrNull<T extends TSchema>(schema: T) {
  const { type, enum: values } = schema as unknown as { type?: unknown; enum?: unknown[] };
  if (typeof type !== "string") return Nullable(schema);
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    type: [type, "null"],
    ...(values ? { enum: [...values, null] } : {}),
  });
}

/** A display name: trimmed text a person types. */
export const DisplayName = Type.String({ minLength: 1, maxLength: 100, pattern: "^\\S(.*\\S)?$" });

export const IdParams = Type.Object({ id: Uuid });
/** The path parameters of the routes under /v2/deployments/{deployment_id}. */
export const DeploymentParams = Type.Object({ deployment_id: Uuid });

/** PostgreSQL's `integer` range: the bound for integers that reach a query or a column. */
export const INT32_MAX = 2_147_483_647;

/** A page size for list routes: 1 to `max`, plain decimal digits in the query string. */
export const QueryLimit = (max: number, fallback: number) =>
  Type.Integer({ minimum: 1, maximum: max, default: fallback });

/** How many records to skip: 0 to PostgreSQL's integer maximum. */
export const QueryOffset = () => Type.Integer({ minimum: 0, maximum: INT32_MAX, default: 0 });

/** A count or size in a body: 0 to PostgreSQL's integer maximum. */
export const Count = (opts: { minimum?: number; description?: string } = {}) =>
  Type.Integer({ minimum: 0, maximum: INT32_MAX, ...opts });

export function iso(date: Date): string;
export function iso(date: Date | null): string | null;
export function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}
