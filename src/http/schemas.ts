import { Type } from "@sinclair/typebox";

/** Shapes shared by many resources. */
export const Uuid = Type.String({ format: "uuid" });
export const DateTime = Type.String({ format: "date-time" });
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** A display name: trimmed text a person types. */
export const DisplayName = Type.String({ minLength: 1, maxLength: 100, pattern: "^\\S(.*\\S)?$" });

export const IdParams = Type.Object({ id: Uuid });

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
