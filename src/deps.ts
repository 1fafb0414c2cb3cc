import type { Config } from "./config.ts";
import type { Keyring } from "./crypto/envelope.ts";
import type { Database } from "./db/client.ts";
import type { ProcessBoard } from "./runtimes/board.ts";

/** What the app is built from; tests pass their own database and keyring. */
export interface AppDeps {
  config: Config;
  db: Database;
  keyring: Keyring;
  /** The processes of the runtimes this process runs (GET /v2/deployments/{id}/processes). */
  processes?: ProcessBoard;
}

declare module "fastify" {
  interface FastifyInstance {
    deps: AppDeps;
  }
}
