import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

declare module "fastify" {
  interface FastifyInstance {
    /** Aborted when the app starts to close: open event streams end on it (http/sse.ts). */
    closing: AbortSignal;
  }
}

/**
 * A close (SIGTERM, a test's teardown) waits only for requests in flight. Node's `server.close()`
 * closes idle keep-alive connections, but three others would each hold it for as long as the
 * keep-alive timeout or the client allows (over a minute, or for ever):
 * - a connection that has not sent a byte (one an HTTP client or a browser opened ahead of a
 *   request), which Node counts as busy: it is closed at once;
 * - a connection whose request was in flight, which would be kept alive after its answer: that
 *   answer says `Connection: close`, so the client goes elsewhere for its next request;
 * - an event stream, which never ends by itself: it ends on `closing`, and the client resumes it
 *   elsewhere with `Last-Event-ID`.
 */
export function registerPromptClose(app: FastifyInstance): void {
  const open = new Set<Socket>();
  const closing = new AbortController();
  app.decorate("closing", closing.signal);
  app.server.on("connection", (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
  app.addHook("preClose", (done) => {
    closing.abort();
    for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
    done();
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing.signal.aborted) reply.header("connection", "close");
    done(null, payload);
  });
}
