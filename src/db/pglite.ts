import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";

/**
 * Server settings of the embedded database, added to PGlite's own start parameters. PGlite starts
 * PostgreSQL with the stock 128 MB `shared_buffers`, all of it resident in the WASM heap; one
 * Slipway process is its only client, and these sizes cost it about 110 MB less (docs/performance.md).
 */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: "16MB",
  wal_buffers: "1MB",
  work_mem: "2MB",
  maintenance_work_mem: "16MB",
  temp_buffers: "2MB",
};

/**
 * PGlite's WASM is compiled by V8's baseline compiler only (Liftoff), without the optimizing tier:
 * measured on the embedded server at rest, 190 MB resident instead of 257–271 MB, for 2–12% less
 * throughput on PGlite (docs/performance.md). Set before the module is compiled; process-wide, and
 * only WASM is affected (a PostgreSQL server never compiles any).
 */
const WASM_FLAG = "--liftoff-only";

function startParams(): string[] {
  const extra = Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ["-c", `${name}=${value}`]);
  return [...PGlite.defaultStartParams, ...extra];
}

/**
 * Initialises an empty data directory in a short-lived child process. PGlite's initdb runs a
 * second WASM instance (about 190 MB) that stays in this process's heap after it is closed; in a
 * child it is returned to the system when the child exits, so a first start is as light as a restart.
 */
async function initdbInChild(dataDir: string): Promise<void> {
  const code = `const [url, dir] = JSON.parse(process.argv[1]);
import(url).then(async ({ PGlite }) => { const db = await PGlite.create(dir); await db.close(); });`;
  const args = JSON.stringify([import.meta.resolve("@electric-sql/pglite"), dataDir]);
  await new Promise<void>((resolve, reject) => {
    let stderr = "";
    const child = spawn(process.execPath, [WASM_FLAG, "-e", code, args], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.once("error", reject);
    child.once("exit", (status, signal) => {
      if (status === 0) resolve();
      else
        reject(
          new Error(
            `initialising the embedded database in ${dataDir} failed (${signal ?? status}): ${stderr}`,
          ),
        );
    });
  });
}

/** Opens embedded PostgreSQL: in a directory (created and initialised on first use) or in memory. */
export async function openPgliteClient(dataDir: string | undefined): Promise<PGlite> {
  if (dataDir !== undefined) {
    mkdirSync(dataDir, { recursive: true });
    if (!existsSync(join(dataDir, "PG_VERSION"))) await initdbInChild(dataDir);
  }
  setFlagsFromString(WASM_FLAG);
  // PGlite.create (not the constructor) so that the extension bundle is loaded before first use.
  return PGlite.create(dataDir, { extensions: { pg_trgm }, startParams: startParams() });
}
