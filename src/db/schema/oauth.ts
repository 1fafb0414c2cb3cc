import { boolean, jsonb, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { organizations, workspaces } from "./identity.ts";

const ts = (name: string) => timestamp(name, { withTimezone: true });

export type TokenEndpointAuthMethod = "client_secret_post" | "client_secret_basic" | "none";
export type CodeChallengeMethod = "S256" | "plain";
export type FlowStatus = "pending" | "completed" | "failed";

export const oauthProviders = pgTable("oauth_providers", {
  id: uuid("id").primaryKey(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  providerId: text("provider_id").notNull(),
  name: text("name").notNull(),
  clientId: text("client_id").notNull(),
  clientSecretEnc: text("client_secret_enc"),
  authUrl: text("auth_url").notNull(),
  tokenUrl: text("token_url").notNull(),
  usesPkce: boolean("uses_pkce").notNull(),
  codeChallengeMethod: text("code_challenge_method").$type<CodeChallengeMethod>(),
  tokenEndpointAuthMethod: text("token_endpoint_auth_method")
    .$type<TokenEndpointAuthMethod>()
    .notNull()
    .default("client_secret_post"),
  providerType: text("provider_type"),
  mcpServerUrl: text("mcp_server_url"),
  isDynamicClient: boolean("is_dynamic_client").notNull().default(false),
  issuer: text("issuer"),
  /** The catalog template it was made from (its quirks apply to flows), and its placeholders' values. */
  template: text("template"),
  templateParams: jsonb("template_params").$type<Record<string, string>>().notNull().default({}),
  /** Where the proxy sends API calls; null: the template's. */
  apiBaseUrl: text("api_base_url"),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});

/**
 * Whose grant a token or a flow is: its tenant (the organization, and the workspace of a
 * workspace-bound key), provider, end user label, agent, scopes.
 */
function grantColumns() {
  return {
    id: uuid("id").primaryKey(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id),
    /** The tenant's workspace when a workspace-bound key obtained it; null: the organization's. */
    tenantWorkspaceId: uuid("tenant_workspace_id").references(() => workspaces.id),
    providerRef: uuid("provider_ref")
      .notNull()
      .references(() => oauthProviders.id),
    userId: text("user_id").notNull(),
    agentId: text("agent_id").notNull().default(""),
    scopes: text("scopes").array().notNull().default([]),
  };
}

export const oauthTokens = pgTable("oauth_tokens", {
  ...grantColumns(),
  tokenType: text("token_type").notNull(),
  accessTokenEnc: text("access_token_enc").notNull(),
  refreshTokenEnc: text("refresh_token_enc"),
  issuer: text("issuer").notNull(),
  expiresAt: ts("expires_at"),
  issuedAt: ts("issued_at").notNull(),
  /** At most one default per (provider, tenant, user, agent): the token authenticate hands out. */
  isDefault: boolean("is_default").notNull().default(false),
  providerAccountLabel: text("provider_account_label"),
  /**
   * The workspace the request that obtained it acted in, when it had one (an organization-level
   * key's too): what the workspace Slack routes look at. Whose the token is: tenantWorkspaceId.
   */
  workspaceId: uuid("workspace_id").references(() => workspaces.id),
  /** Set when the provider refused a refresh for good: kept to show why, never handed out. */
  brokenAt: ts("broken_at"),
  brokenReason: text("broken_reason"),
  lastRefreshedAt: ts("last_refreshed_at"),
  lastError: text("last_error"),
  lastErrorAt: ts("last_error_at"),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});

export const oauthFlows = pgTable("oauth_flows", {
  ...grantColumns(),
  stateHash: text("state_hash").notNull(),
  codeVerifierEnc: text("code_verifier_enc"),
  redirectUri: text("redirect_uri").notNull(),
  status: text("status").$type<FlowStatus>().notNull().default("pending"),
  failureReason: text("failure_reason"),
  tokenRef: uuid("token_ref").references(() => oauthTokens.id),
  /** The token this flow renews (re-consent keeps its id); null: the flow makes a new token. */
  targetTokenRef: uuid("target_token_ref").references(() => oauthTokens.id),
  makeDefault: boolean("make_default").notNull().default(true),
  workspaceId: uuid("workspace_id").references(() => workspaces.id),
  createdAt: ts("created_at").notNull().defaultNow(),
  expiresAt: ts("expires_at").notNull(),
  consumedAt: ts("consumed_at"),
  finishedAt: ts("finished_at"),
});

/** A workspace's agent uses this stored token for the token's provider. */
export const agentConnections = pgTable("agent_connections", {
  id: uuid("id").primaryKey(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: uuid("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  agentId: text("agent_id").notNull(),
  oauthTokenRef: uuid("oauth_token_ref")
    .notNull()
    .references(() => oauthTokens.id),
  providerRef: uuid("provider_ref")
    .notNull()
    .references(() => oauthProviders.id),
  createdBy: text("created_by").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
});
