import { and, asc, eq, sql } from "drizzle-orm";
import type { IntegrationRow } from "../../codehost/drivers.ts";
import { type Executor, rows } from "../../db/client.ts";
import { integrations } from "../../db/schema/codehost.ts";

/**
 * The only module that writes SQL on `integrations`. Reading one by id is codehost/store.ts's
 * `findIntegration` (codehost may not import resources/), which the service calls too.
 */

export type NewIntegrationRow = typeof integrations.$inferInsert;

export function integrationRows(exec: Executor, organizationId: string): Promise<IntegrationRow[]> {
  return exec
    .select()
    .from(integrations)
    .where(eq(integrations.organizationId, organizationId))
    .orderBy(asc(integrations.createdAt), asc(integrations.id));
}

export async function insertIntegrationRow(
  exec: Executor,
  values: NewIntegrationRow,
): Promise<IntegrationRow> {
  const [row] = await exec.insert(integrations).values(values).returning();
  if (!row) throw new Error("storing the integration returned no row");
  return row;
}

export async function deleteIntegrationRow(
  exec: Executor,
  organizationId: string,
  id: string,
): Promise<void> {
  await exec
    .delete(integrations)
    .where(and(eq(integrations.id, id), eq(integrations.organizationId, organizationId)));
}

/**
 * The name of a live deployment of the organization that builds from the integration, if any
 * (a read of `deployments`, which deployments/store.ts writes).
 */
export async function deploymentUsing(
  exec: Executor,
  organizationId: string,
  integrationId: string,
): Promise<string | undefined> {
  const [used] = await rows<{ name: string }>(
    exec,
    sql`SELECT name FROM deployments
         WHERE organization_id = ${organizationId} AND source = 'codehost'
           AND source_config->>'integration_id' = ${integrationId} AND status <> 'AWAITING_DELETE'
         LIMIT 1`,
  );
  return used?.name;
}
