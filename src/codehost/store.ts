import { and, eq } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { isUuid } from "../db/ids.ts";
import { integrations } from "../db/schema/codehost.ts";
import type { IntegrationRow } from "./drivers.ts";

/** The integration, if it exists (and, given an organization, belongs to it). */
export async function findIntegration(
  exec: Executor,
  id: string,
  organizationId?: string,
): Promise<IntegrationRow | undefined> {
  if (!isUuid(id)) return undefined;
  const where =
    organizationId === undefined
      ? eq(integrations.id, id)
      : and(eq(integrations.id, id), eq(integrations.organizationId, organizationId));
  const [row] = await exec.select().from(integrations).where(where);
  return row;
}
