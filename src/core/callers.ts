import type { Role } from "../db/schema/identity.ts";

/*
 * Who is acting: resolved by the HTTP layer's auth hook, handed to services as plain values so
 * that nothing below the HTTP layer needs to know about requests.
 */

/**
 * What authentication needs to know about an API key, read in one statement (the API keys' store
 * `keyByHash`; http/auth.ts gets that lookup handed in at wiring and makes the Principal of it).
 */
export interface KeyRow {
  id: string;
  organization_id: string;
  workspace_id: string | null;
  role: Role;
  listener_id: string | null;
  is_system: boolean;
  revoked: boolean;
  default_workspace_id: string | null;
  requested_workspace: string | null;
}

/** Who is calling, resolved once per request by the auth hook. */
export interface Principal {
  keyId: string;
  organizationId: string;
  role: Role;
  isSystem: boolean;
  /** The workspace the key is bound to, if any. */
  boundWorkspaceId: string | null;
  /** A listener key's listener (role `listener`), else null. */
  listenerId: string | null;
  /** The workspace this request acts in, or null with the reason in `tenantError`. */
  workspaceId: string | null;
  tenantError: string | null;
}

/** A caller acting in one workspace (what `workspaceOf` resolves): deployments, revisions, uploads. */
export interface WorkspaceCaller {
  organizationId: string;
  workspaceId: string;
}

/** A caller acting on its organization, held to the workspace its key is bound to (if any). */
export type OrganizationCaller = Pick<Principal, "organizationId" | "boundWorkspaceId">;
