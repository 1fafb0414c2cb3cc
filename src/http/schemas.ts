import { Type } from "@sinclair/typebox";

/** Shapes shared by many resources. */
export const Uuid = Type.String({ format: "uuid" });
export const DateTime = Type.String({ format: "date-time" });
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** A display name: trimmed text a person types. */
export const DisplayName = Type.String({ minLength: 1, maxLength: 100, pattern: "^\\S(.*\\S)?$" });

export const IdParams = Type.Object({ id: Uuid });

export function iso(date: Date): string;
export function iso(date: Date | null): string | null;
export function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}
