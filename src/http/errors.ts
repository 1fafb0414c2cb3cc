import { type Static, Type } from "@sinclair/typebox";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError, FieldsInvalid, type Refusal } from "../core/errors.ts";
import { isDiskFull } from "../db/errors.ts";

/** One entry of a 422 body, FastAPI style: where (`loc`), what (`msg`), and a machine `type`. */
export const ValidationItem = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  type: Type.String(),
});
export type ValidationItem = Static<typeof ValidationItem>;

export const ErrorBody = Type.Object(
  { detail: Type.Union([Type.String(), Type.Array(ValidationItem)]) },
  { $id: "Error", description: "`detail` is a sentence, or for 422 a list of field errors." },
);

/** An error response of a route's schema: the shared body with the route's own description. */
export const errorResponse = (description: string) => ({ ...ErrorBody, description });

/** An error that is the caller's to fix (4xx) or a fault we name on purpose (502/503). */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The status of each kind of domain error: the one place a refusal becomes a status code. */
const STATUS: Record<Refusal, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  precondition_failed: 412,
  too_large: 413,
  unsupported_media_type: 415,
  invalid: 422,
  rate_limited: 429,
  bad_gateway: 502,
  unavailable: 503,
};

/** The status code of a kind of refusal. */
export const statusOf = (kind: Refusal): number => STATUS[kind];

/** The status a domain error maps to; undefined for anything that is not one (a fault: 500). */
export function domainStatus(err: unknown): number | undefined {
  return err instanceof DomainError ? STATUS[err.kind] : undefined;
}

const PART: Record<string, string> = {
  body: "body",
  querystring: "query",
  params: "path",
  headers: "header",
};

interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

function ajvToItems(context: string | undefined, errors: AjvError[]): ValidationItem[] {
  const part = PART[context ?? "body"] ?? "body";
  const seen = new Set<string>();
  const items: ValidationItem[] = [];
  // anyOf failures restate their branches' errors; the branches say more.
  const useful = errors.some((e) => e.keyword !== "anyOf")
    ? errors.filter((e) => e.keyword !== "anyOf")
    : errors;
  for (const e of useful) {
    const loc: (string | number)[] = [part];
    for (const seg of e.instancePath.split("/").slice(1)) {
      const key = seg.replace(/~1/g, "/").replace(/~0/g, "~");
      loc.push(/^\d+$/.test(key) ? Number(key) : key);
    }
    let msg = e.message ?? "is invalid";
    let type = e.keyword;
    if (e.keyword === "required") {
      loc.push(String(e.params.missingProperty));
      msg = "Field required";
      type = "missing";
    } else if (e.keyword === "additionalProperties") {
      loc.push(String(e.params.additionalProperty));
      msg = "Extra field not permitted";
      type = "extra_forbidden";
    } else if (e.keyword === "enum") {
      msg = `must be one of: ${(e.params.allowedValues as unknown[]).join(", ")}`;
    }
    const key = `${JSON.stringify(loc)}|${msg}`;
    if (seen.has(key)) continue;
    seen.add(key);
    items.push({ loc, msg, type });
  }
  return items;
}

const DISK_FULL =
  "The server's disk is full, so this change was not saved; nothing else was lost. Try again later: an operator has to free space (docs/operations.md#disk-full).";
const DISK_FULL_RETRY_S = "60";

/** Maps every error to `{detail}` with the right status; faults are logged and never leak. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(
    (error: FastifyError | HttpError | Error, request: FastifyRequest, reply: FastifyReply) => {
      if (error instanceof FieldsInvalid) {
        return reply.code(422).send({ detail: error.items });
      }
      if (error instanceof HttpError) {
        for (const [k, v] of Object.entries(error.headers)) reply.header(k, v);
        if (error.statusCode >= 500) request.log.warn({ err: error }, "upstream or availability error");
        return reply.code(error.statusCode).send({ detail: error.message });
      }
      const domain = domainStatus(error);
      if (domain !== undefined) {
        if (error instanceof DomainError && error.challenge)
          reply.header("www-authenticate", error.challenge);
        if (domain >= 500) request.log.warn({ err: error }, "upstream or availability error");
        return reply.code(domain).send({ detail: error.message });
      }
      const fe = error as FastifyError;
      if (fe.validation) {
        return reply
          .code(422)
          .send({ detail: ajvToItems(fe.validationContext, fe.validation as AjvError[]) });
      }
      const status = fe.statusCode ?? 500;
      if (status >= 400 && status < 500) {
        const detail = CLIENT_ERRORS[fe.code ?? ""] ?? fe.message;
        return reply.code(status).send({ detail });
      }
      if (isDiskFull(error)) {
        // Nothing was written (the statement failed whole); the client tries again once space returns.
        request.log.error({ err: error }, "disk full: a write was refused");
        return reply.code(503).header("retry-after", DISK_FULL_RETRY_S).send({ detail: DISK_FULL });
      }
      request.log.error({ err: error }, "unhandled error");
      return reply.code(500).send({ detail: "Internal server error" });
    },
  );

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: `No route for ${request.method} ${request.url.split("?")[0]}` });
  });
}

/** Fastify's own 4xx errors, in words a client can act on. */
const CLIENT_ERRORS: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "Request body is larger than the limit.",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "Unsupported Content-Type: send application/json.",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "Content-Length does not match the body.",
  FST_ERR_CTP_EMPTY_JSON_BODY: "Body is empty but Content-Type is application/json.",
  FST_ERR_CTP_INVALID_JSON_BODY: "Body is not valid JSON.",
};
