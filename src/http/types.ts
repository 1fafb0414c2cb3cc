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

/**
 * The type of a JSON body sent as stored text (records kept ready to send): given a string with a
 * JSON content type, Fastify sends it as is instead of running the response serializer.
 */
const STORED_JSON = "application/json; charset=utf-8";

/** Sends JSON text as stored; the route's response schema still documents it (OpenAPI, tests). */
export function sendStored(reply: FastifyReply, json: string): FastifyReply {
  return reply.type(STORED_JSON).send(json);
}
