import type { Config } from "./config.ts";
import type { Keyring } from "./crypto/envelope.ts";
import type { Database } from "./db/client.ts";

/** What the app is built from; tests pass their own database and keyring. */
export interface AppDeps {
  config: Config;
  db: Database;
  keyring: Keyring;
}

declare module "fastify" {
  interface FastifyInstance {
    deps: AppDeps;
  }
}
