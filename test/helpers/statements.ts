import pg from "pg";
import { NOTIFY_BATCH } from "../../src/db/announce.ts";

type QueryFn = (...args: unknown[]) => unknown;
const proto = pg.Client.prototype as unknown as { query: QueryFn };

/** The first statement of a PATCH's read (core/deployments/read-store.ts, readPatchState). */
export const PATCH_READ = /^SELECT d\.xmin::text AS version/;

/** The first statement of a revision-creating PATCH's write (core/deployments/write-store.ts, commitRevision). */
export const PATCH_WRITE = /^WITH moved AS \(/;

/**
 * Runs `fn`, returning the text of every statement sent to the PostgreSQL server meanwhile,
 * counted by wrapping the driver's `Client.query`, which every statement goes through (pool
 * clients included). Notifications announced after commit are not counted: their statement is
 * shared by the writes of a few milliseconds and sent after the answer (db/announce.ts).
 * `afterRead`, when given, runs after each of a PATCH's reads has answered and before the PATCH
 * goes on: a change racing the PATCH's write.
 */
export async function statementsOf(
  fn: () => Promise<void>,
  afterRead?: () => Promise<void>,
): Promise<string[]> {
  const seen: string[] = [];
  await withQueries(fn, (query, args, send) => {
    seen.push(query.text);
    if (!afterRead || !PATCH_READ.test(query.text)) return send(args);
    // The pool passes a callback; a client used directly gets a promise.
    const callback = args.at(-1);
    if (typeof callback === "function") {
      return send([
        ...args.slice(0, -1),
        (err: unknown, res: unknown) => {
          void afterRead().then(() => callback(err, res));
        },
      ]);
    }
    return (send(args) as Promise<unknown>).then(async (r) => {
      await afterRead();
      return r;
    });
  });
  return seen;
}

/** Runs `fn`, returning each statement sent meanwhile with its parameters (as `statementsOf` counts them). */
export async function queriesOf(fn: () => Promise<void>): Promise<Query[]> {
  const seen: Query[] = [];
  await withQueries(fn, (query, args, send) => {
    seen.push(query);
    return send(args);
  });
  return seen;
}

interface Query {
  text: string;
  values: unknown[];
}

/**
 * Runs `fn` with every statement sent on the driver's `Client.query` (pool clients included)
 * going through `hook`, which sends it on by `send`; the after-commit notifications are not shown.
 */
async function withQueries(
  fn: () => Promise<void>,
  hook: (query: Query, args: unknown[], send: (args: unknown[]) => unknown) => unknown,
): Promise<void> {
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const send = (a: unknown[]) => original.apply(this, a);
    const first = args[0] as string | { text?: string; values?: unknown[] };
    // (text, values), (config), or (config, values) as the ORM sends them.
    const values = Array.isArray(args[1]) ? (args[1] as unknown[]) : undefined;
    const query =
      typeof first === "string"
        ? { text: first, values: values ?? [] }
        : { text: String(first.text), values: values ?? first.values ?? [] };
    if (query.text === NOTIFY_BATCH) return send(args);
    return hook(query, args, send);
  };
  try {
    await fn();
  } finally {
    proto.query = original;
  }
}
