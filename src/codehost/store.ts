import { and, eq } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { integrations } from "../db/schema/codehost.ts";
import type { IntegrationRow } from "./drivers.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The integration, if it exists (and, given an organization, belongs to it). */
export async function findIntegration(
  exec: Executor,
  id: string,
  organizationId?: string,
): Promise<IntegrationRow | undefined> {
  if (!UUID.test(id)) return undefined;
  const where =
    organizationId === undefined
      ? eq(integrations.id, id)
      : and(eq(integrations.id, id), eq(integrations.organizationId, organizationId));
  const [row] = await exec.select().from(integrations).where(where);
  return row;
}
