/** PostgreSQL error codes we turn into client errors. Drizzle wraps driver errors in `cause`. */
function pgCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === "object"; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function constraintOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === "object"; i++) {
    const c = (e as { constraint?: unknown }).constraint;
    if (typeof c === "string") return c;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export const isUniqueViolation = (err: unknown) => pgCode(err) === "23505";
export const isForeignKeyViolation = (err: unknown) => pgCode(err) === "23503";

/**
 * The disk holding the database (or a file being written) is full: PostgreSQL's disk_full (53100,
 * "could not extend file …: No space left on device", PGlite's too) or a file write's ENOSPC.
 */
export function isDiskFull(err: unknown): boolean {
  if (pgCode(err) === "53100") return true;
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === "object"; i++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (code === "ENOSPC" || (typeof message === "string" && message.includes("No space left on device")))
      return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
