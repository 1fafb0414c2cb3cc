import type { FastifyRequest } from "fastify";

/** Query parameters whose values are credentials: signed upload URLs, OAuth codes and tokens. */
const SECRET_QUERY = /([?&](?:token|code|client_secret|access_token|refresh_token)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, "$1[redacted]");
}

/** Fastify's request log fields, with credentials in the query string blanked out. */
export function requestLogFields(req: FastifyRequest) {
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}
