import { createHash } from "node:crypto";
import type { SQL } from "drizzle-orm";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import pg from "pg";
import type { DatabaseTarget } from "../config.ts";
import { Announcer, NOTIFY_BATCH, type Note } from "./announce.ts";
import { compileSql } from "./compile.ts";
import { PgListener } from "./pg-listener.ts";
import * as schema from "./schema/index.ts";

export type Schema = typeof schema;
/** The one ORM type services use, whichever driver is underneath. */
export type Orm = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema>;
/** Either the database or an open transaction: services accept this so callers can compose them. */
export type Executor = Orm | Tx;

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

export interface LockedConnection {
  exec(script: string): Promise<void>;
  query<T>(text: string, params?: unknown[]): Promise<T[]>;
}

/**
 * An open transaction of `Database.transaction`: `orm` for code that takes an Executor, `query` for
 * the hot statements, which on PostgreSQL run as named prepared statements (planned once per
 * connection, not at every call as the ORM's unnamed statements in a transaction are).
 */
export interface Transaction {
  readonly orm: Executor;
  query<T>(query: SQL): Promise<T[]>;
  /** Notifications to announce once this transaction has committed (none if it rolls back). */
  announce(notes: readonly Note[]): void;
}

export interface Database {
  readonly kind: "pglite" | "postgres";
  readonly orm: Orm;
  /** Runs fn in a transaction: BEGIN, fn's statements, COMMIT (ROLLBACK when fn throws). */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * A read on the pool as a named prepared statement: PostgreSQL plans it once per connection
   * instead of on every call (4x the throughput for the record query). PGlite runs it plainly.
   */
  prepared<T>(query: SQL): Promise<T[]>;
  /** Runs a multi-statement script (migrations). */
  exec(script: string): Promise<void>;
  /** Runs fn on one connection while it holds a session-level advisory lock. */
  withAdvisoryLock<T>(key: number, fn: (conn: LockedConnection) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on a channel; returns the unsubscribe function. */
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Whether notifications can have been missed: undefined while the listening connection is down,
   * otherwise a number that changes after every loss of it. (PGlite never loses one.)
   */
  listenEpoch(): number | undefined;
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Sends notifications within milliseconds, by a statement shared with others announced meanwhile
   * (announce.ts); resolves once sent. Pending ones are sent before the database closes.
   */
  announce(notes: readonly Note[]): Promise<void>;
  ping(): Promise<void>;
  stats(): PoolStats;
  close(): Promise<void>;
}

/**
 * Where a read can run: an open transaction (the ORM's or `Database.transaction`'s), the ORM, or
 * the database (prepared statements).
 */
export type Reader = Executor | Database | Transaction;

/**
 * Typed rows of a raw query, identical on both drivers. Given the Database itself, or a
 * transaction of `Database.transaction`, a hot read runs as a named prepared statement.
 */
export async function rows<T>(exec: Reader, query: SQL): Promise<T[]> {
  if ("prepared" in exec) return exec.prepared<T>(query);
  // The ORM has no `orm`: this is a `Database.transaction`.
  if ("orm" in exec) return exec.query<T>(query);
  const result = (await exec.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

function checkChannel(channel: string): string {
  if (!CHANNEL.test(channel)) throw new Error(`invalid channel name ${channel}`);
  return channel;
}

async function openPglite(
  target: Extract<DatabaseTarget, { kind: "pglite" | "pglite-memory" }>,
): Promise<Database> {
  // Loaded only here: a server on PostgreSQL never carries the embedded database's modules.
  const [{ openPgliteClient }, { drizzle: drizzlePglite }] = await Promise.all([
    import("./pglite.ts"),
    import("drizzle-orm/pglite"),
  ]);
  const client = await openPgliteClient(target.kind === "pglite" ? target.dataDir : undefined);
  const orm = drizzlePglite({ client, schema }) as unknown as Orm;
  const announcer = new Announcer((channels, payloads) => client.query(NOTIFY_BATCH, [channels, payloads]));
  let closed = false;
  return {
    kind: "pglite",
    orm,
    prepared: async <T>(query: SQL) => ((await orm.execute(query)) as unknown as { rows: T[] }).rows,
    // PGlite has one connection and no named statements to keep: the ORM's transaction is the same.
    transaction: (fn) =>
      announcer.afterCommit((announce) =>
        orm.transaction((tx) => fn({ orm: tx, query: (q) => rows(tx, q), announce })),
      ),
    exec: async (script) => {
      await client.exec(script);
    },
    // One process owns a PGlite directory, so the lock is uncontended; it is still taken so the
    // code path above the driver is the same.
    withAdvisoryLock: async (key, fn) => {
      await client.query("SELECT pg_advisory_lock($1)", [key]);
      try {
        return await fn({
          exec: async (script) => {
            await client.exec(script);
          },
          query: async <T>(text: string, params?: unknown[]) => (await client.query<T>(text, params)).rows,
        });
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [key]);
      }
    },
    listen: async (channel, handler) => {
      const unlisten = await client.listen(checkChannel(channel), handler);
      return async () => {
        if (!closed) await unlisten();
      };
    },
    listenEpoch: () => (closed ? undefined : 0),
    notify: async (channel, payload) => {
      await client.query("SELECT pg_notify($1, $2)", [checkChannel(channel), payload]);
    },
    announce: (notes) => announcer.announce(notes),
    ping: async () => {
      if (closed) throw new Error("database closed");
      await client.query("SELECT 1");
    },
    stats: () => ({ total: 1, idle: 1, waiting: 0 }),
    close: async () => {
      if (closed) return;
      await announcer.drain();
      closed = true;
      await client.close();
    },
  };
}

const names = new Map<string, string>();

/** A stable name per statement text; the texts are few (one per query shape), so the map stays small. */
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `sw_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}

function openPostgres(url: string, poolSize: number): Database {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, idleTimeoutMillis: 30_000 });
  // An idle client's error (server restart) must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  const orm = drizzlePg({ client: pool, schema }) as unknown as Orm;
  const listener = new PgListener(url);
  const announcer = new Announcer((channels, payloads) =>
    pool.query({ name: "sw_notify_batch", text: NOTIFY_BATCH, values: [channels, payloads] }),
  );
  let ended = false;
  const transaction = async <T>(
    fn: (tx: Transaction) => Promise<T>,
    announce: Transaction["announce"],
  ): Promise<T> => {
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      await client.query("BEGIN");
      try {
        const result = await fn({
          // Without the schema: nothing runs relational queries in a transaction, and it is cheaper.
          orm: insideTransaction(drizzlePg({ client }) as unknown as Orm),
          query: async <R>(query: SQL) => {
            const { sql: text, params } = compileSql(query);
            const res = await client.query({ name: statementName(text), text, values: params });
            return res.rows as R[];
          },
          announce,
        });
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch((e: Error) => {
          broken = e;
        });
        throw err;
      }
    } finally {
      // A connection whose ROLLBACK failed is in an unknown state: the pool drops it.
      client.release(broken);
    }
  };
  return {
    kind: "postgres",
    orm,
    prepared: async <T>(query: SQL) => {
      const { sql: text, params } = compileSql(query);
      const result = await pool.query({ name: statementName(text), text, values: params });
      return result.rows as T[];
    },
    // Announced once the connection is back in the pool: the statement may need one.
    transaction: (fn) => announcer.afterCommit((announce) => transaction(fn, announce)),
    exec: async (script) => {
      await pool.query(script);
    },
    withAdvisoryLock: async (key, fn) => {
      const client = await pool.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [key]);
        try {
          return await fn({
            exec: async (script) => {
              await client.query(script);
            },
            query: async <T>(text: string, params?: unknown[]) =>
              (await client.query(text, params)).rows as T[],
          });
        } finally {
          await client.query("SELECT pg_advisory_unlock($1)", [key]);
        }
      } finally {
        client.release();
      }
    },
    listen: (channel, handler) => listener.listen(checkChannel(channel), handler),
    listenEpoch: () => listener.epoch,
    notify: async (channel, payload) => {
      await pool.query("SELECT pg_notify($1, $2)", [checkChannel(channel), payload]);
    },
    announce: (notes) => announcer.announce(notes),
    ping: async () => {
      await pool.query("SELECT 1");
    },
    stats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: async () => {
      // Once: pg's Pool refuses a second end(), and an owner may close what a test closed first.
      if (ended) return;
      ended = true;
      await announcer.drain();
      await listener.close();
      await pool.end();
    },
  };
}

export async function openDatabase(
  target: DatabaseTarget,
  opts: { poolSize?: number } = {},
): Promise<Database> {
  if (target.kind === "postgres") return openPostgres(target.url, opts.poolSize ?? 10);
  return openPglite(target);
}

/**
 * Runs `fn` atomically: in a new transaction on the database, or in a savepoint of the caller's,
 * so that writes that must land together (a change and its event) do whichever way they are called.
 */
export function inTransaction<T>(exec: Executor, fn: (tx: Executor) => Promise<T>): Promise<T> {
  // An ORM over a connection already inside BEGIN: its own `transaction` would send a second
  // BEGIN and then COMMIT the caller's transaction half-way; the caller's transaction is enough.
  if (openTransactions.has(exec)) return fn(exec);
  return (exec as Orm).transaction((tx) => fn(tx));
}

/** ORMs bound to one connection inside `Database.transaction` (see `inTransaction`). */
const openTransactions = new WeakSet<Executor>();

function insideTransaction(orm: Orm): Orm {
  openTransactions.add(orm);
  return orm;
}
