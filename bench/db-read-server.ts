import Fastify from "fastify";
import { loadConfig } from "../src/config/load.ts";
import { deploymentPage } from "../src/core/deployments/list-store.ts";
import { findDeploymentRecord } from "../src/core/deployments/read-store.ts";
import { openDatabase } from "../src/db/client.ts";

/**
 * A second reference beside the limit: bare Fastify routes (no auth, hooks or validation) that run
 * Slipway's own list and get statements on the same PostgreSQL and send what they return. What
 * Slipway loses against it is Slipway's HTTP layer; what this loses against the limit is the
 * database read itself. Reads the workspace id on stdin, prints its URL.
 */
const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const workspaceId = Buffer.concat(chunks).toString("utf8").trim();
const config = loadConfig({ DATABASE_URL: process.env.DATABASE_URL ?? "", LOG_LEVEL: "silent" });
const db = await openDatabase(config.database, { poolSize: 10 });

const app = Fastify({ logger: false });
app.get<{ Querystring: { limit?: string; offset?: string } }>("/v2/deployments", async (req, reply) => {
  const body = await deploymentPage(
    db,
    workspaceId,
    {},
    Number(req.query.limit ?? 20),
    Number(req.query.offset ?? 0),
  );
  reply.header("content-type", "application/json; charset=utf-8");
  return reply.send(body);
});
app.get<{ Params: { id: string } }>("/v2/deployments/:id", async (req, reply) => {
  const found = await findDeploymentRecord(db, workspaceId, req.params.id);
  reply.header("content-type", "application/json; charset=utf-8");
  if (found) reply.header("etag", found.etag);
  return reply.code(found ? 200 : 404).send(found?.record ?? "{}");
});
await app.listen({ port: 0, host: "127.0.0.1" });
const address = app.server.address();
if (typeof address !== "object" || address === null) throw new Error("no address");
console.log(JSON.stringify({ url: `http://127.0.0.1:${address.port}` }));
process.on("SIGTERM", () => {
  void app
    .close()
    .then(() => db.close())
    .then(() => process.exit(0));
});
