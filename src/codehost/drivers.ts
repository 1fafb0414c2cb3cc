import type { Config } from "../config.ts";
import type { integrations } from "../db/schema/codehost.ts";
import { HostUnavailable } from "./errors.ts";
import { githubAppOf } from "./github/client.ts";
import { GithubDriver } from "./github/driver.ts";
import type { CodehostDriver } from "./interface.ts";
import { LocalGitDriver } from "./local-git/driver.ts";

export type IntegrationRow = typeof integrations.$inferSelect;

/** The part of the server's configuration code hosts read. */
export type CodehostConfig = Pick<Config, "localGitRoots" | "github">;

/** The driver that reads an integration's host, as the server is configured now. */
export function driverFor(config: CodehostConfig, integration: IntegrationRow): CodehostDriver {
  const c = integration.config;
  if (integration.kind === "local_git" && "path" in c)
    return new LocalGitDriver(c.path, config.localGitRoots);
  if (integration.kind === "github" && "installation_id" in c) {
    const app = githubAppOf(config);
    if (!app) throw new HostUnavailable("The GitHub App is not configured on this server any more.");
    return new GithubDriver(app, c.installation_id);
  }
  throw new HostUnavailable(`Integration ${integration.id} has an unreadable configuration.`);
}
