import { ConfigError } from "../config.ts";
import { CLIENT_USAGE, isClientCommand, runClient } from "./client.ts";

const USAGE = `Usage: slipway <command>

Server commands:
  serve                 run the API server (what \`npm start\` runs)
  migrate               apply pending database migrations and exit
  keys rotate [--new]   re-encrypt every stored secret under the active master key;
                        with --new (embedded key file only) first generate a new active key
  listener [options]    run in (or beside) a Kubernetes cluster: apply what the control plane
                        wants there and report back (\`slipway listener --help\`)
  hook post-receive     from a git post-receive hook: send Slipway a signed push so local_git
                        deployments build at once (\`slipway hook post-receive --help\`)

Server configuration comes from the environment: see README.md.

${CLIENT_USAGE}`;

// Server modules load only for server commands, so client commands start quickly.
async function serve(): Promise<void> {
  const { loadConfig } = await import("../config.ts");
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

async function migrateOnly(): Promise<void> {
  const { loadConfig } = await import("../config.ts");
  const { openDatabase } = await import("../db/client.ts");
  const { migrate } = await import("../db/migrate.ts");
  const db = await openDatabase(loadConfig().database);
  try {
    const ran = await migrate(db);
    console.log(ran.length ? `Applied: ${ran.join(", ")}` : "Database is up to date.");
  } finally {
    await db.close();
  }
}

async function rotate(args: string[]): Promise<void> {
  const { loadConfig } = await import("../config.ts");
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

async function listener(args: string[]): Promise<void> {
  const { Listener } = await import("../listener/listener.ts");
  const { LISTENER_USAGE, parseListenerArgs } = await import("../listener/options.ts");
  if (args.includes("--help")) {
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

async function hook(args: string[]): Promise<void> {
  const { HOOK_USAGE, postReceive } = await import("./hook.ts");
  const { UsageError } = await import("./args.ts");
  if (args[0] !== "post-receive") {
    console.error(HOOK_USAGE);
    process.exitCode = 2;
    return;
  }
  const chunks: Buffer[] = [];
  if (!process.stdin.isTTY) for await (const c of process.stdin) chunks.push(c as Buffer);
  try {
    process.exitCode = await postReceive(args.slice(1), Buffer.concat(chunks).toString("utf8"));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(err.message);
    process.exitCode = 2;
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return serve();
    case "migrate":
      return migrateOnly();
    case "listener":
      return listener(rest);
    case "hook":
      return hook(rest);
    case "keys":
      if (rest[0] === "rotate") return rotate(rest.slice(1));
      process.exitCode = await runClient("keys", rest);
      return;
    case undefined:
    case "help":
    case "--help":
      console.log(USAGE);
      return;
  }
  if (command && isClientCommand(command)) {
    process.exitCode = await runClient(command, rest);
    return;
  }
  console.error(USAGE);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof ConfigError) {
    console.error(`Configuration error: ${err.message}`);
  } else {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  }
  process.exit(1);
});
