import { type SQL, sql } from "drizzle-orm";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { type Executor, rows } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { deployments } from "../../db/schema/deployments.ts";

/** What the reconciler records on a deployment while it runs it, and the table's encrypted columns. */

/**
 * The revision now serves the deployment at `url`; an image revision also names its version
 * (null: the image names none), other revisions leave it as it was (undefined).
 */
export async function activateRevision(
  exec: Executor,
  id: string,
  revisionId: string,
  url: string,
  imageVersion: string | null | undefined,
): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments
           SET active_revision_id = ${revisionId},
               source_config = jsonb_set(source_config, '{custom_url}', to_jsonb(${servedUrl(sql`${url}::text`, sql`substring(${url}::text from ${HOST_PATTERN})`)})),
               updated_at = now()
         WHERE id = ${id}`,
  );
  if (imageVersion !== undefined) {
    await exec.execute(sql`UPDATE deployments SET image_version = ${imageVersion} WHERE id = ${id}`);
  }
}

/** The host part of a URL, and what `regexp_replace` puts back around a new one (scheme, port, path). */
const HOST_PATTERN = "^[a-z]+://([^/:]+)";
const URL_HOST = "^([a-z]+://)[^/:]+";

/**
 * `url` with its host replaced by the deployment's first verified custom domain (docs/domains.md),
 * else by `fallbackHost`: the scheme and port stay the apps listener's. Used in statements
 * that change a deployments row (`deployments.id` names it).
 */
function servedUrl(url: SQL, fallbackHost: SQL): SQL {
  return sql`regexp_replace(${url}, ${URL_HOST}, ${"\\1"}::text || COALESCE(
    (SELECT c.hostname FROM custom_domains c
      WHERE c.deployment_id = deployments.id AND c.verification_status = 'verified'
      ORDER BY c.verified_at, c.id LIMIT 1),
    ${fallbackHost}))`;
}

/**
 * A custom domain of the deployment was verified or removed: `custom_url` names its first verified
 * one, else its host under the apps domain. Deployments without a server-set URL keep theirs.
 */
export async function rehostCustomUrl(exec: Executor, id: string, appsDomain: string): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments
           SET source_config = jsonb_set(source_config, '{custom_url}',
                 to_jsonb(${servedUrl(sql`source_config->>'custom_url'`, sql`name || '.' || ${appsDomain}::text`)})),
               updated_at = now()
         WHERE id = ${id} AND source <> 'external_docker' AND source_config->>'custom_url' IS NOT NULL`,
  );
}

/** The database a deployment's app uses (reconciler/app-database.ts provisions it). */
export async function setDatabaseName(exec: Executor, id: string, name: string): Promise<void> {
  await exec.execute(sql`UPDATE deployments SET database_name = ${name} WHERE id = ${id}`);
}

/** Columns holding the envelope of a password the reconciler generates for a deployment's service. */
const PASSWORD_COLUMNS = { database: sql`database_password_enc`, redis: sql`redis_password_enc` } as const;

/** Stores a service's password envelope unless one is stored (the first writer wins), then reads it. */
export async function servicePasswordEnc(
  exec: Executor,
  id: string,
  service: keyof typeof PASSWORD_COLUMNS,
  fresh: string,
): Promise<string | null> {
  const column = PASSWORD_COLUMNS[service];
  await exec.execute(sql`UPDATE deployments SET ${column} = ${fresh} WHERE id = ${id} AND ${column} IS NULL`);
  const [row] = await rows<{ enc: string | null }>(
    exec,
    sql`SELECT ${column} AS enc FROM deployments WHERE id = ${id}`,
  );
  return row?.enc ?? null;
}

/** The apps router passed it a request at `at` (kept when an earlier time is reported later). */
export async function recordLastRequest(exec: Executor, id: string, at: string): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments SET last_request_at = GREATEST(COALESCE(last_request_at, ${at}::timestamptz), ${at}::timestamptz)
         WHERE id = ${id}`,
  );
}

/** Sets why its database is over its storage (null: within it); true when that changed. */
export async function setStorageNote(exec: Executor, id: string, note: string | null): Promise<boolean> {
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE deployments SET storage_note = ${note}
         WHERE id = ${id} AND storage_note IS DISTINCT FROM ${note} RETURNING id`,
  );
  return done.length === 1;
}

/** The encrypted columns of this store's tables, for key rotation. */
export const deploymentEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, deployments, deployments.pendingSecretsEnc),
  envelopeColumn(exec, deployments, deployments.databasePasswordEnc),
  envelopeColumn(exec, deployments, deployments.redisPasswordEnc),
];
