import { randomBytes } from "node:crypto";
import pg from "pg";
import { servicePasswordEnc, setDatabaseName } from "../core/deployments/runtime-store.ts";
import type { Keyring } from "../crypto/envelope.ts";
import { encryptionContext } from "../crypto/envelope.ts";
import type { Executor } from "../db/client.ts";

/** Role and database name of a deployment's own database: derived from its id, always a safe identifier. */
export function appDatabaseName(deploymentId: string): string {
  return `slipway_app_${deploymentId.replace(/-/g, "").toLowerCase()}`;
}

export interface AppDatabase {
  name: string;
  password: string;
  /** postgres:// URL the app uses (DATABASE_URI / POSTGRES_URI). */
  uri: string;
}

const context = (deploymentId: string) =>
  encryptionContext("deployments", "database_password_enc", deploymentId);

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`unsafe identifier ${name}`);
  return `"${name}"`;
}

async function withAdmin<T>(adminUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Per-deployment databases on the PostgreSQL server of SLIPWAY_APPS_DATABASE_URL (an admin
 * connection): one role and one database per deployment, the role's password stored encrypted.
 */
export class AppDatabases {
  constructor(
    private readonly adminUrl: string,
    private readonly keyring: Keyring,
  ) {}

  uriFor(name: string, password: string): string {
    const u = new URL(this.adminUrl);
    u.username = name;
    u.password = password;
    u.pathname = `/${name}`;
    return u.toString();
  }

  /**
   * Creates (or finds) the deployment's role and database; idempotent, so a retry after a crash is
   * safe. The role's CONNECTION LIMIT is the revision's `db_max_connections` (unset: none), set
   * again at every provisioning, so a new revision changes it.
   */
  async provision(
    exec: Executor,
    deploymentId: string,
    resourceSpec: Record<string, unknown> | null = null,
  ): Promise<AppDatabase> {
    const name = appDatabaseName(deploymentId);
    const password = await this.password(exec, deploymentId);
    const limit = connectionLimit(resourceSpec);
    await withAdmin(this.adminUrl, async (c) => {
      const ident = quoteIdent(name);
      // The password is hex and the limit an integer, so both can sit in the statement as literals.
      const role = await c.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [name]);
      if (role.rowCount === 0) {
        await c
          .query(`CREATE ROLE ${ident} LOGIN PASSWORD '${password}' CONNECTION LIMIT ${limit}`)
          .catch(ignoreCode("42710"));
      }
      await c.query(`ALTER ROLE ${ident} LOGIN PASSWORD '${password}' CONNECTION LIMIT ${limit}`);
      const db = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
      if (db.rowCount === 0) {
        await c.query(`CREATE DATABASE ${ident} OWNER ${ident}`).catch(ignoreCode("42P04"));
      }
    });
    await setDatabaseName(exec, deploymentId, name);
    return { name, password, uri: this.uriFor(name, password) };
  }

  /** Sizes in bytes of the given databases (pg_database_size); missing ones are left out. */
  async sizes(names: readonly string[]): Promise<Map<string, number>> {
    if (names.length === 0) return new Map();
    return withAdmin(this.adminUrl, async (c) => {
      const found = await c.query<{ datname: string; size: string }>(
        "SELECT datname, pg_database_size(datname)::text AS size FROM pg_database WHERE datname = ANY($1)",
        [names],
      );
      return new Map(found.rows.map((r) => [r.datname, Number(r.size)]));
    });
  }

  /** Drops the deployment's database (closing its connections) and role. */
  async drop(deploymentId: string): Promise<void> {
    const ident = quoteIdent(appDatabaseName(deploymentId));
    await withAdmin(this.adminUrl, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${ident} WITH (FORCE)`);
      await c.query(`DROP ROLE IF EXISTS ${ident}`);
    });
  }

  /** The stored password, or a new one stored first (the first writer wins a race). */
  private async password(exec: Executor, deploymentId: string): Promise<string> {
    const fresh = randomBytes(24).toString("hex");
    const enc = await servicePasswordEnc(
      exec,
      deploymentId,
      "database",
      this.keyring.encrypt(fresh, context(deploymentId)),
    );
    if (!enc) throw new Error(`deployment ${deploymentId} is gone`);
    return this.keyring.decrypt(enc, context(deploymentId));
  }
}

/** `db_max_connections` as a CONNECTION LIMIT: a whole number ≥ 0 as given (0: none may connect), else -1 (no limit). */
export function connectionLimit(resourceSpec: Record<string, unknown> | null): number {
  const value = resourceSpec?.db_max_connections;
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : -1;
}

function ignoreCode(code: string) {
  return (err: unknown) => {
    if ((err as { code?: string }).code !== code) throw err;
  };
}
