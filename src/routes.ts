import type { Registry } from "prom-client";
import type { App } from "./http/types.ts";
import { platformRoutes } from "./platform/routes.ts";
import { agentConnectionRoutes } from "./resources/agent-connections/routes.ts";
import { apiKeyRoutes } from "./resources/api-keys/routes.ts";
import { deploymentRoutes } from "./resources/deployments/routes.ts";
import { integrationRoutes } from "./resources/integrations/routes.ts";
import { listenerRoutes } from "./resources/listeners/routes.ts";
import { oauthFlowRoutes } from "./resources/oauth-flows/routes.ts";
import { oauthProviderRoutes } from "./resources/oauth-providers/routes.ts";
import { oauthTokenRoutes } from "./resources/oauth-tokens/routes.ts";
import { organizationRoutes } from "./resources/organizations/routes.ts";
import { revisionLogRoutes } from "./resources/revision-logs/routes.ts";
import { revisionRoutes } from "./resources/revisions/routes.ts";
import { tagRoutes } from "./resources/tags/routes.ts";
import { templateRoutes } from "./resources/templates/routes.ts";
import { tracingProjectRoutes } from "./resources/tracing-projects/routes.ts";
import { uploadRoutes } from "./resources/uploads/routes.ts";
import { workspaceRoutes } from "./resources/workspaces/routes.ts";

/** Every route of the API, mounted under the configured base path. */
export async function routes(app: App, opts: { metrics: Registry }): Promise<void> {
  await app.register(platformRoutes, opts);
  await app.register(organizationRoutes);
  await app.register(workspaceRoutes);
  await app.register(apiKeyRoutes);
  await app.register(deploymentRoutes);
  await app.register(revisionRoutes);
  await app.register(tracingProjectRoutes);
  await app.register(tagRoutes);
  await app.register(oauthProviderRoutes);
  await app.register(oauthFlowRoutes);
  await app.register(oauthTokenRoutes);
  await app.register(agentConnectionRoutes);
  await app.register(integrationRoutes);
  await app.register(uploadRoutes);
  await app.register(templateRoutes);
  await app.register(revisionLogRoutes);
  await app.register(listenerRoutes);
}
