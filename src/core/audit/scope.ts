import { AsyncLocalStorage } from "node:async_hooks";
import type { SQL } from "drizzle-orm";
import { type Executor, inTransaction } from "../../db/client.ts";
import { type AuditScope, auditInsert } from "./store.ts";

const current = new AsyncLocalStorage<AuditScope>();

/**
 * Scopes in use. On Node 20 an enabled AsyncLocalStorage installs promise hooks that every promise
 * of the process pays for (about 6% of a cached read's CPU, profiled); it is kept enabled only while a scope
 * is in use, and disabled (it enables itself again on the next `run`) when none is.
 */
let inUse = 0;

function release(): void {
  inUse--;
  if (inUse === 0) current.disable();
}

/**
 * Runs the rest of a write request with its audit scope, so stores can record it in their
 * transaction; the returned function ends the scope (the response's hook calls it, once).
 */
export function runWithAuditScope(scope: AuditScope, fn: () => void): () => void {
  inUse++;
  let ended = false;
  current.run(scope, fn);
  return () => {
    if (ended) return;
    ended = true;
    release();
  };
}

/** Runs `fn` (which writes in its own transactions) under an audit scope: the change's transaction records it. */
export async function withAuditScope<T>(scope: AuditScope, fn: () => Promise<T>): Promise<T> {
  inUse++;
  try {
    return await current.run(scope, fn);
  } finally {
    release();
  }
}

/**
 * Writes the current request's audit record in `tx`, the transaction of its change, so the change
 * and its record commit (or roll back) together. Outside a write request it does nothing; a second
 * call in the same request does nothing either. `resourceId` names what a create made.
 */
export async function recordAuditInTransaction(tx: Executor, resourceId?: string): Promise<void> {
  const statement = auditInTransaction(resourceId);
  if (statement) await tx.execute(statement);
}

/**
 * The statement of `recordAuditInTransaction`, for a caller that folds it into its own write (a
 * data-modifying CTE), or null when there is nothing to record. The scope counts it as written:
 * if the transaction rolls back, the response's hook finds no record and writes one. With `gate`,
 * the record is written only when that condition holds (the statement's change happened); a
 * caller whose statement then wrote nothing says so with `auditNotWritten`.
 */
export function auditInTransaction(resourceId?: string, gate?: SQL): SQL | null {
  const scope = current.getStore();
  if (!scope || scope.recorded) return null;
  if (resourceId !== undefined && scope.resourceId === null) scope.resourceId = resourceId;
  scope.recorded = true;
  return auditInsert(scope, scope.successStatus, gate);
}

/** The statement that carried the current request's record wrote nothing: a later one must. */
export function auditNotWritten(): void {
  const scope = current.getStore();
  if (scope) scope.recorded = false;
}

/**
 * Runs a write and its audit record in one transaction: `fn`'s change, then the current request's
 * record (named by `idOf` of the result, for creates), then COMMIT. Every service whose change
 * commits in a transaction goes through here or through `recordAuditInTransaction`, so a committed
 * change never lacks its record; outside a write request it is a plain transaction.
 */
export function inAuditedTransaction<T>(
  exec: Executor,
  fn: (tx: Executor) => Promise<T>,
  idOf?: (result: T) => string | undefined,
): Promise<T> {
  return inTransaction(exec, async (tx) => {
    const result = await fn(tx);
    await recordAuditInTransaction(tx, idOf?.(result));
    return result;
  });
}
