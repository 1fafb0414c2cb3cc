import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply } from "fastify";

/** The Fastify instance route plugins receive: TypeBox schemas type the handlers. */
export type App = FastifyInstance<
  Server,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Methods that read: viewers may call them, they write no audit record and drop no cached answer. */
export const READ_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The type of a JSON body sent as stored text (records kept ready to send): given a string with a
 * JSON content type, Fastify sends it as is instead of running the response serializer.
 */
const STORED_JSON = "application/json; charset=utf-8";

/**
 * Answers with the JSON text `body` resolves to, as stored; a rejection goes to the error handler.
 * Handlers using it are not async and return nothing: an async handler would have to return the
 * reply, and Fastify resolves a returned reply by attaching a stream listener to the response,
 * which cost about 5% of a cached read (profiled). The route's response schema still documents the body
 * (OpenAPI, tests).
 */
export function replyStored(reply: FastifyReply, body: () => Promise<string>): void {
  body().then(
    (json) => reply.type(STORED_JSON).send(json),
    (err: unknown) => reply.send(err instanceof Error ? err : new Error(String(err))),
  );
}
