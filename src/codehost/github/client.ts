import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/rest";
import type { Config } from "../../config.ts";
import { badGateway, HttpError } from "../../http/errors.ts";

/** One deadline for a whole operation (all pages of a listing, token exchange included). */
const OPERATION_TIMEOUT_MS = 30_000;

export interface GithubApp {
  appId: string;
  privateKey: string;
  apiUrl: string;
}

/** The configured GitHub App, or undefined when the server has none. */
export function githubAppOf(config: Config): GithubApp | undefined {
  const { appId, privateKey, apiUrl } = config.github;
  return appId && privateKey ? { appId, privateKey, apiUrl } : undefined;
}

/**
 * An Octokit that signs app requests with the app JWT and, given an installation, exchanges it
 * for an installation token (cached by the auth strategy for this client's lifetime).
 */
export function githubClient(app: GithubApp, installationId?: number): Octokit {
  return new Octokit({
    baseUrl: app.apiUrl,
    authStrategy: createAppAuth,
    auth: { appId: app.appId, privateKey: app.privateKey, installationId },
    request: { signal: AbortSignal.timeout(OPERATION_TIMEOUT_MS) },
    userAgent: "slipway",
    // Octokit's own console warnings would bypass the app's logger; failures surface as errors.
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
}

/** The HTTP status GitHub answered with, when the failure is an HTTP answer at all. */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown }).status;
  return typeof status === "number" && status > 0 ? status : undefined;
}

/** Any failure to talk to GitHub as a 502 whose detail says what happened, never a 500. */
export function upstreamError(err: unknown, doing: string): HttpError {
  if (err instanceof HttpError) return err;
  const status = statusOf(err);
  if (status !== undefined) {
    const message = (err as Error).message.split("\n")[0]?.slice(0, 200) ?? "";
    return badGateway(`GitHub answered ${status} while ${doing}: ${message}`);
  }
  const e = err as Error;
  if (e.name === "TimeoutError" || e.name === "AbortError") {
    return badGateway(`GitHub did not answer in time while ${doing}.`);
  }
  return badGateway(`GitHub could not be reached while ${doing}.`);
}
