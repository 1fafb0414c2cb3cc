// The server side of the `slipway` command: serve, migrate, keys rotate and listener. The one
// module of the clients' folders (cli, console, sdk) that reaches server code (test/layers.test.ts);
// each command loads its modules only when it runs, so client commands start quickly.

import { loadConfig } from "../config/load.ts";
import { ConfigError } from "../config.ts";
import { wantsHelp } from "./args.ts";

/** What main.ts reports as a configuration error (thrown by loadConfig and the commands here). */
export { ConfigError };

/** `slipway serve`: the API (and the reconciler), until SIGTERM or SIGINT lets requests finish. */
export async function serve(): Promise<void> {
  const { startServer } = await import("../server.ts");
  const server = await startServer(loadConfig());
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    server.app.log.info({ signal }, "shutting down: finishing in-flight requests");
    server.stop().then(
      () => process.exit(0),
      (err) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

/**
 * `slipway migrate`: applies pending migrations and exits. With --check it applies nothing and
 * lists what is pending (exit 1 when something is), and migrations a newer release applied.
 */
export async function migrateOnly(args: string[] = []): Promise<void> {
  const { openDatabase } = await import("../db/client.ts");
  const { checkMigrations, migrate } = await import("../db/migrate.ts");
  const db = await openDatabase(loadConfig().database);
  try {
    if (args.includes("--check")) {
      const { pending, unknown } = await checkMigrations(db);
      console.log(pending.length ? `Pending: ${pending.join(", ")}` : "Database is up to date.");
      if (unknown.length) {
        console.log(
          `Applied by a newer Slipway (unknown to this one, which still runs on it): ${unknown.join(", ")}`,
        );
      }
      if (pending.length) process.exitCode = 1;
      return;
    }
    const ran = await migrate(db);
    console.log(ran.length ? `Applied: ${ran.join(", ")}` : "Database is up to date.");
  } finally {
    await db.close();
  }
}

/** `slipway restore FILE [--force]`: a backup into an empty database, offline (docs/operations.md). */
export async function restore(args: string[]): Promise<void> {
  const { restoreBackup, RestoreRefused } = await import("../backup/restore.ts");
  const { BackupFileError } = await import("../backup/format.ts");
  const file = args.find((a) => !a.startsWith("--"));
  if (file === undefined) throw new ConfigError("slipway restore needs the backup FILE to restore.");
  const config = loadConfig();
  const target =
    config.database.kind === "postgres" ? "the database of DATABASE_URL" : `the data dir ${config.dataDir}`;
  try {
    const report = await restoreBackup(file, {
      database: config.database,
      keys: config,
      force: args.includes("--force"),
    });
    const h = report.header;
    console.log(
      `Restored ${report.rows} rows of ${report.tables} tables into ${target}, from a backup of Slipway ${h.slipway_version} (${h.database}) taken at ${h.taken_at}.`,
    );
    if (report.migrated.length)
      console.log(`Then applied this Slipway's newer migrations: ${report.migrated.join(", ")}.`);
    console.log(
      "Start the server: it runs each deployment's active revision again, building it from its stored source.",
    );
  } catch (err) {
    if (!(err instanceof RestoreRefused || err instanceof BackupFileError)) throw err;
    console.error(err.message);
    process.exitCode = 1;
  }
}

/** What `slipway backup` checks a downloaded file with (the clients reach server code only here). */
export async function verifyBackupFile(
  path: string,
): Promise<{ rows: number; version: string; takenAt: string }> {
  const { verifyBackup } = await import("../backup/format.ts");
  const { header, end } = await verifyBackup(path);
  return { rows: end.rows, version: header.slipway_version, takenAt: header.taken_at };
}

/** `slipway keys rotate [--new]`: re-encrypts every stored secret under the active master key. */
export async function rotate(args: string[]): Promise<void> {
  const { addKeyToFile, loadKeyring } = await import("../crypto/master-key.ts");
  const { rotateSecrets } = await import("../crypto/rotate.ts");
  const { openDatabase } = await import("../db/client.ts");
  const { migrate } = await import("../db/migrate.ts");
  const { envelopeColumns } = await import("../resources/envelopes.ts");
  const config = loadConfig();
  if (args.includes("--new")) {
    if (config.masterKey) {
      throw new ConfigError(
        "--new works on the embedded key file; with SLIPWAY_MASTER_KEY set, put the new key there and the old one in SLIPWAY_PREVIOUS_MASTER_KEYS.",
      );
    }
    addKeyToFile(config.dataDir);
    console.log("Generated a new active master key; restart servers so they encrypt with it.");
  }
  const { keyring } = loadKeyring(config);
  const db = await openDatabase(config.database);
  try {
    await migrate(db);
    const results = await rotateSecrets(keyring, envelopeColumns(db.orm));
    for (const r of results) console.log(`${r.table}.${r.column}: re-encrypted ${r.rewrapped}`);
    console.log(`Every stored secret is now under key ${keyring.activeKid}.`);
  } finally {
    await db.close();
  }
}

/** `slipway listener`: the Kubernetes listener, until SIGTERM or SIGINT. */
export async function listener(args: string[]): Promise<void> {
  if (args[0] === "render") {
    // `slipway listener render`: the objects of a desired state, printed (no cluster, no control plane).
    const { readFileSync } = await import("node:fs");
    const { renderCommand } = await import("../listener/render.ts");
    renderCommand(
      args.slice(1),
      () => readFileSync(0, "utf8"),
      (text) => process.stdout.write(text),
    );
    return;
  }
  const { Listener } = await import("../listener/listener.ts");
  const { LISTENER_USAGE, parseListenerArgs } = await import("../listener/options.ts");
  if (wantsHelp(args)) {
    console.log(LISTENER_USAGE);
    return;
  }
  const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);
  const agent = new Listener(parseListenerArgs(args, process.env, log));
  const stop = (signal: string) => {
    log(`listener: ${signal}, stopping`);
    agent.stop();
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  log("listener: started");
  await agent.run();
  // Open watch streams and keep-alive sockets would hold the process; everything is stopped.
  process.exit(0);
}
