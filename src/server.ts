import { buildApp } from "./app.ts";
import { bootstrap } from "./bootstrap.ts";
import type { Config } from "./config.ts";
import { loadKeyring } from "./crypto/master-key.ts";
import { openDatabase } from "./db/client.ts";
import { migrate } from "./db/migrate.ts";
import type { App } from "./http/types.ts";
import { LocalGitPoller } from "./resources/integrations/poller.ts";
import { WebhookDispatcher } from "./resources/webhooks/dispatcher.ts";
import { ProcessBoard } from "./runtimes/board.ts";
import { startReconciler } from "./wiring/reconciler.ts";

export interface RunningServer {
  app: App;
  url: string;
  stop(): Promise<void>;
}

function describeDatabase(config: Config): string {
  const d = config.database;
  if (d.kind === "pglite") return `embedded PGlite at ${d.dataDir}`;
  if (d.kind === "pglite-memory") return "in-memory PGlite (data is lost on exit)";
  const u = new URL(d.url);
  return `PostgreSQL at ${u.host}${u.pathname}`;
}

/** Opens the database, migrates, bootstraps, builds the app and listens. */
export async function startServer(
  config: Config,
  out: (line: string) => void = console.log,
): Promise<RunningServer> {
  const db = await openDatabase(config.database);
  await migrate(db);
  const { keyring, source } = loadKeyring(config);
  const boot = await bootstrap(db, config.bootstrapApiKey);
  const processes = new ProcessBoard();
  const app = await buildApp({ config, db, keyring, processes });
  if (source === "generated" && config.database.kind === "postgres") {
    app.log.warn("generated a master key in the data dir; set SLIPWAY_MASTER_KEY so every replica shares it");
  }
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}${config.basePath}`;
  // Every process sends webhooks: deliveries are claimed with SKIP LOCKED, so they share the queue.
  const dispatcher = new WebhookDispatcher({
    db,
    keyring,
    allowPrivate: config.webhooks.allowPrivate,
    log: app.log,
  });
  await dispatcher.start();
  // Every process polls local_git heads; a lock lets one act per pass (SLIPWAY_LOCAL_GIT_POLL_S=0: none).
  const poller = new LocalGitPoller({
    db,
    keyring,
    config,
    intervalMs: config.localGitPollS * 1000,
    log: app.log,
  });
  poller.start();
  const reconciler = config.reconciler.enabled
    ? await startReconciler({ config, db, keyring, processes }, app.log)
    : undefined;
  out(`Slipway is serving ${url} on ${describeDatabase(config)}`);
  if (reconciler) out(`  Apps:      http://<name>.${config.apps.domain}:${reconciler.appsPort}`);
  out(`  API docs:  ${url}/docs   health: ${url}/ok`);
  if (boot.generatedKey) {
    out("  Bootstrap API key (system, admin), shown this once; keep it safe:");
    out(`    ${boot.generatedKey}`);
    out(`  Try: curl -H 'X-Api-Key: ${boot.generatedKey}' ${url}/v1/workspaces`);
  }
  let stopping: Promise<void> | undefined;
  return {
    app,
    url,
    stop: () => {
      // Stop accepting, let in-flight requests finish, then close the pool.
      stopping ??= (async () => {
        await app.close();
        await dispatcher.stop();
        await poller.stop();
        await reconciler?.stop();
        await db.close();
      })();
      return stopping;
    },
  };
}
