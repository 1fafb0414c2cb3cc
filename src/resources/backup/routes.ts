import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import { Type } from "@sinclair/typebox";
import { takeSnapshot } from "../../backup/snapshot.ts";
import { slipwayVersion } from "../../config/version.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";

/**
 * `GET /v1/backup`: a backup of the whole database (docs/operations.md), for system admin keys
 * only. The snapshot is written to a file in the data dir first and then streamed from it, so the
 * snapshot's transaction (on PGlite: the pause of every writer) lasts as long as reading the
 * database takes, not as long as the client takes to download.
 */
export async function backupRoutes(app: App): Promise<void> {
  const { db, keyring, config } = app.deps;

  app.get(
    "/v1/backup",
    {
      config: { auth: { system: true, role: "admin" } },
      schema: {
        tags: ["operations"],
        summary: "Download a backup of the whole database (system admin keys only)",
        description:
          "A consistent snapshot, gzip-compressed, with a checksum; secrets stay sealed and the master key is never in it. " +
          "Restore it with `slipway restore FILE` (docs/operations.md).",
        produces: ["application/gzip"],
        response: {
          200: Type.Unsafe<NodeJS.ReadableStream>({
            type: "string",
            format: "binary",
            description: "The backup file.",
          }),
          403: errorResponse("Not a system admin key."),
        },
      },
    },
    async (request, reply) => {
      const dir = join(config.dataDir, "tmp");
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `backup-${randomUUID()}.partial`);
      try {
        const out = createWriteStream(file);
        const result = await takeSnapshot(
          db,
          { slipwayVersion: slipwayVersion(), masterKeyId: keyring.activeKid },
          out,
        );
        await finished(out);
        request.log.info(
          { rows: result.rows, transactionMs: Math.round(result.transactionMs) },
          "backup taken",
        );
        const stamp = new Date().toISOString().replace(/[:.]/g, "-");
        const stream = createReadStream(file);
        stream.once("close", () => rmSync(file, { force: true }));
        return reply
          .type("application/gzip")
          .header("content-disposition", `attachment; filename="slipway-${stamp}.backup.gz"`)
          .header("x-slipway-backup-rows", String(result.rows))
          .header("x-slipway-backup-transaction-ms", String(Math.round(result.transactionMs)))
          .send(stream);
      } catch (err) {
        rmSync(file, { force: true });
        throw err;
      }
    },
  );
}
