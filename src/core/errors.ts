/**
 * Domain errors: what went wrong, in words a caller can act on, with a kind that says whose it is
 * to fix. Services and stores throw these; `http/errors.ts` is the one place that maps a kind to a
 * status code, so nothing below the HTTP layer knows HTTP.
 */

/** The kinds of refusal, each one status in `http/errors.ts`. */
export type Refusal =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "gone"
  | "precondition_failed"
  | "too_large"
  | "unsupported_media_type"
  | "invalid"
  | "rate_limited"
  | "bad_gateway"
  | "unavailable";

/** One field at fault, FastAPI style: where (`loc`, starting with the request part), what, and a machine `type`. */
export interface FieldProblem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class DomainError extends Error {
  constructor(
    readonly kind: Refusal,
    message: string,
    /** For `unauthorized`: the scheme a client should answer with (a `WWW-Authenticate` value). */
    readonly challenge?: string,
  ) {
    super(message);
  }
}

/** One or more fields at fault (a 422 listing them). */
export class FieldsInvalid extends DomainError {
  constructor(readonly items: FieldProblem[]) {
    super("invalid", items.map((i) => `${i.loc.join(".")}: ${i.msg}`).join("; "));
  }
}

export const badRequest = (msg: string) => new DomainError("bad_request", msg);
export const unauthorized = (msg: string, challenge?: string) =>
  new DomainError("unauthorized", msg, challenge);
export const forbidden = (msg: string) => new DomainError("forbidden", msg);
export const notFound = (msg: string) => new DomainError("not_found", msg);
export const conflict = (msg: string) => new DomainError("conflict", msg);
export const gone = (msg: string) => new DomainError("gone", msg);
export const preconditionFailed = (msg: string) => new DomainError("precondition_failed", msg);
export const tooLarge = (msg: string) => new DomainError("too_large", msg);
export const unsupportedMediaType = (msg: string) => new DomainError("unsupported_media_type", msg);
export const badGateway = (msg: string) => new DomainError("bad_gateway", msg);
export const unavailable = (msg: string) => new DomainError("unavailable", msg);

/** One field at fault; `loc` starts with the request part: "body", "query", "path", "header". */
export function invalid(loc: (string | number)[], msg: string, type = "value_error"): FieldsInvalid {
  return new FieldsInvalid([{ loc, msg, type }]);
}
