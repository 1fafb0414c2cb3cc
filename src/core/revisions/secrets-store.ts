import { type SQL, sql } from "drizzle-orm";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { revisionSecrets } from "../../db/schema/deployments.ts";

/** The only module that writes SQL on `revision_secrets`: sealed values, shared by the revisions that keep them. */

/**
 * A secret as stored: its value is an envelope bound to the deployment and name, or, for rows
 * written before migration 0008 (`deployment_id` null), to the row id (deployments/secrets.ts).
 */
export interface StoredSecret {
  id: string;
  /** The revision the row belongs to: the one read, or the earlier one it shares the rows of. */
  revision_id: string;
  name: string;
  value_enc: string;
  deployment_id: string | null;
}

/** A secret to insert: its envelope, already bound to the deployment and name. */
export interface SealedSecret {
  name: string;
  value_enc: string;
}

/**
 * The statement inserting a new revision's secrets in their order (part of `commitRevision`'s
 * CTE), with the row ids given: the writer knows the rows it wrote without reading them back.
 */
export function insertSecretsStatement(
  revisionId: string,
  deploymentId: string,
  secrets: (SealedSecret & { id: string })[],
  gate: SQL = sql`true`,
): SQL {
  return sql`INSERT INTO revision_secrets (id, revision_id, deployment_id, name, value_enc, position)
      SELECT s.id, ${revisionId}::uuid, ${deploymentId}::uuid, s.name, s.value_enc, s.position
        FROM jsonb_to_recordset(${JSON.stringify(secrets.map(({ id, name, value_enc }, position) => ({ id, name, value_enc, position })))}::jsonb)
             AS s(id uuid, name text, value_enc text, position int)
       WHERE ${gate}`;
}

/** The rows holding a revision's secrets: its own, or those of the revision it shares them with. */
export const secretsOwner = (revision: SQL) => sql`coalesce(${revision}.secrets_revision_id, ${revision}.id)`;

/** A revision's secrets in their order (its own rows or the ones it shares, migration 0022). */
export function secretRows(exec: Reader, revisionId: string): Promise<StoredSecret[]> {
  return rows<StoredSecret>(
    exec,
    sql`SELECT s.id, s.revision_id, s.name, s.value_enc, s.deployment_id
          FROM revisions r JOIN revision_secrets s ON s.revision_id = ${secretsOwner(sql`r`)}
         WHERE r.id = ${revisionId} ORDER BY s.position`,
  );
}

/** The encrypted columns of this store's tables, for key rotation. */
export const revisionEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(
    exec,
    revisionSecrets,
    revisionSecrets.valueEnc,
    // secretContextId, in SQL.
    sql`coalesce(${revisionSecrets.deploymentId}::text || '/' || ${revisionSecrets.name}, ${revisionSecrets.id}::text)`,
  ),
];

/**
 * The id a revision secret's encryption context names: `<deployment id>/<name>` (rows since
 * migration 0008, so a new revision copies an unchanged envelope as is), or the row id (older
 * rows, deployment_id null). `revisionEnvelopes` states the same rule in SQL, for rotation.
 */
export function secretContextId(row: { id: string; name: string; deployment_id: string | null }): string {
  return row.deployment_id === null ? row.id : `${row.deployment_id}/${row.name}`;
}
