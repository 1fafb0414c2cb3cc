import Fastify from "fastify";

/**
 * The limit: a bare Fastify route on the same machine answering the same bytes from memory.
 * Reads {list, get, patch} response bodies as JSON on stdin, prints its URL.
 */
const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const bodies = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
  list: string;
  get: string;
  patch: string;
};

const app = Fastify({ logger: false });
const send =
  (body: string) =>
  (_req: unknown, reply: { header(k: string, v: string): unknown; send(b: string): unknown }) => {
    reply.header("content-type", "application/json; charset=utf-8");
    return reply.send(body);
  };
app.get("/v2/deployments", send(bodies.list));
app.get("/v2/deployments/:id", send(bodies.get));
app.patch("/v2/deployments/:id", send(bodies.patch));
await app.listen({ port: 0, host: "127.0.0.1" });
const address = app.server.address();
if (typeof address !== "object" || address === null) throw new Error("no address");
console.log(JSON.stringify({ url: `http://127.0.0.1:${address.port}` }));
process.on("SIGTERM", () => {
  void app.close().then(() => process.exit(0));
});
