import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/rest";
import type { Config } from "../../config.ts";
import { CodehostError, HostUnavailable } from "../errors.ts";

/** One deadline for a whole operation (all pages of a listing, token exchange included). */
const OPERATION_TIMEOUT_MS = 30_000;

export interface GithubApp {
  appId: string;
  privateKey: string;
  apiUrl: string;
}

/** The configured GitHub App, or undefined when the server has none. */
export function githubAppOf(config: Pick<Config, "github">): GithubApp | undefined {
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
    auth:
      installationId === undefined
        ? { appId: app.appId, privateKey: app.privateKey }
        : { appId: app.appId, privateKey: app.privateKey, installationId },
    request: { signal: AbortSignal.timeout(OPERATION_TIMEOUT_MS) },
    userAgent: "slipway",
    // Octokit's own console warnings would bypass the app's logger; failures surface as errors.
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
}

/**
 * The HTTP status GitHub answered with; undefined when it did not answer (Octokit reports network
 * failures as status 500 too, but without a response).
 */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { response?: { status?: unknown } }).response?.status;
  return typeof status === "number" ? status : undefined;
}

function timedOut(err: unknown): boolean {
  for (let e: unknown = err, i = 0; e instanceof Error && i < 3; e = e.cause, i++) {
    if (e.name === "TimeoutError" || e.name === "AbortError") return true;
  }
  return false;
}

/** Any failure to talk to GitHub as HostUnavailable whose message says what happened. */
export function upstreamError(err: unknown, doing: string): CodehostError {
  if (err instanceof CodehostError) return err;
  const status = statusOf(err);
  let result: HostUnavailable;
  if (status !== undefined) {
    const message = (err as Error).message.split("\n")[0]?.slice(0, 200) ?? "";
    result = new HostUnavailable(`GitHub answered ${status} while ${doing}: ${message}`);
  } else if (timedOut(err)) {
    result = new HostUnavailable(`GitHub did not answer in time while ${doing}.`);
  } else {
    result = new HostUnavailable(`GitHub could not be reached while ${doing}.`);
  }
  // The server log keeps the underlying error; the client gets the sentence.
  result.cause = err;
  return result;
}
