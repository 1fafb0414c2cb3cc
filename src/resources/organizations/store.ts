import { asc, eq } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { organizations } from "../../db/schema/identity.ts";

/** The only module that writes SQL on `organizations`. */

export type OrganizationRow = typeof organizations.$inferSelect;

export async function insertOrganizationRow(exec: Executor, name: string): Promise<OrganizationRow> {
  const [row] = await exec.insert(organizations).values({ name }).returning();
  if (!row) throw new Error("storing the organization returned no row");
  return row;
}

export async function setDefaultWorkspace(
  exec: Executor,
  id: string,
  workspaceId: string,
): Promise<OrganizationRow> {
  const [row] = await exec
    .update(organizations)
    .set({ defaultWorkspaceId: workspaceId })
    .where(eq(organizations.id, id))
    .returning();
  if (!row) throw new Error(`organization ${id} vanished while it was being created`);
  return row;
}

/** Every organization, or only `onlyId` when one is given; oldest first. */
export function organizationRows(exec: Executor, onlyId: string | null) {
  const q = exec.select().from(organizations);
  return (onlyId === null ? q : q.where(eq(organizations.id, onlyId))).orderBy(
    asc(organizations.createdAt),
    asc(organizations.id),
  );
}

/** The install's first (oldest) organization. */
export async function firstOrganization(exec: Executor): Promise<OrganizationRow | undefined> {
  const [row] = await exec
    .select()
    .from(organizations)
    .orderBy(asc(organizations.createdAt), asc(organizations.id))
    .limit(1);
  return row;
}

export async function organizationNamed(exec: Executor, name: string): Promise<OrganizationRow | undefined> {
  const [row] = await exec.select().from(organizations).where(eq(organizations.name, name));
  return row;
}
