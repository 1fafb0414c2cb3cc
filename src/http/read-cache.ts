import type { FastifyInstance } from "fastify";
import type { Database } from "../db/client.ts";
import { ReadCache } from "../db/read-cache.ts";
import { READ_METHODS } from "./types.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** GET answers of stored records, per workspace (db/read-cache.ts). */
    reads: ReadCache;
  }
}

/**
 * The read cache of this app, and the one rule that keeps a client's own writes visible to its
 * next read on this process: any request that may write drops its workspace's cached answers
 * (every answer, when it names no workspace) before its response leaves, whether or not it wrote.
 * Changes made elsewhere (the reconciler, other processes) arrive by notification.
 */
export async function registerReadCache(app: FastifyInstance, db: Database, maxBytes: number): Promise<void> {
  const cache = new ReadCache(db, maxBytes);
  await cache.start();
  app.decorate("reads", cache);
  app.addHook("onSend", (request, _reply, payload, done) => {
    if (!READ_METHODS.has(request.method)) {
      const workspaceId = request.principal?.workspaceId;
      if (workspaceId) cache.invalidate(workspaceId);
      else cache.clear();
    }
    done(null, payload);
  });
  app.addHook("onClose", async () => {
    await cache.close();
  });
}
