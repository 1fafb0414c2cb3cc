import type { FastifyRequest } from "fastify";
import { type Principal, principalOf } from "../../http/auth.ts";

/**
 * Whose tokens a request acts on. Tokens belong to an end user of the organization: the user the
 * request names (`user_id`, for keys acting for their application's users), else the calling API
 * key's own user. So another key, or another organization, does not see a caller's tokens.
 */
export interface TokenOwner {
  organizationId: string;
  userId: string;
  /** The workspace the request acts in, if it has one (tokens remember where they were obtained). */
  workspaceId: string | null;
}

/** The user id of an API key acting for itself. */
export const keyUserId = (p: Principal) => `apikey:${p.keyId}`;

export function ownerOf(request: FastifyRequest, userId?: string | null): TokenOwner {
  const p = principalOf(request);
  return { organizationId: p.organizationId, userId: userId ?? keyUserId(p), workspaceId: p.workspaceId };
}
