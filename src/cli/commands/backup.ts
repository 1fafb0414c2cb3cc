// `slipway backup --out FILE`: downloads GET /v1/backup (a system admin key) into FILE, checking
// the file's checksum before it takes FILE's name, so FILE is never half a backup.
import { createWriteStream, renameSync, rmSync } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { SlipwayError } from "../../sdk/client.ts";
import { type FlagSpec, UsageError } from "../args.ts";
import { atMost, type Context } from "../context.ts";

export const backupFlags: FlagSpec = { booleans: [], values: ["out"], aliases: { o: "out" } };

export async function backup(ctx: Context): Promise<void> {
  atMost(ctx, 0);
  const out = ctx.args.value("out");
  if (!out) throw new UsageError("Missing --out FILE: where to write the backup.", true);
  const client = ctx.client();
  const res = await client.fetch(`${client.baseUrl}/v1/backup`, { headers: client.headers });
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => ({}))) as { detail?: unknown };
    throw new SlipwayError(
      res.status,
      typeof body.detail === "string" ? body.detail : `The server answered ${res.status}.`,
    );
  }
  const partial = `${out}.partial`;
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(partial));
    const { verifyBackupFile } = await import("../serve.ts");
    const checked = await verifyBackupFile(partial);
    renameSync(partial, out);
    ctx.out.event({
      event: "backup",
      file: out,
      rows: checked.rows,
      slipway_version: checked.version,
      taken_at: checked.takenAt,
    });
    ctx.out.line(
      `Wrote ${out}: ${checked.rows} rows, Slipway ${checked.version}, taken at ${checked.takenAt} (checksum verified).`,
    );
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
}
