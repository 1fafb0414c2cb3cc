// The states the API names, as values for clients (the generated types hold them as types only).
// Browser-safe: the console and the CLI both read these.
import type { Deployment, Revision } from "./client.ts";

/** A deployment's own status (the hosted service's: READY stays while a newer revision fails). */
export const DEPLOYMENT_STATUSES = [
  "AWAITING_DATABASE",
  "READY",
  "UNUSED",
  "AWAITING_DELETE",
  "UNKNOWN",
] as const;

/** A revision's status, in the order of its happy path, then its ends. */
export const REVISION_STATUSES = [
  "CREATING",
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
  "DEPLOYED",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "SKIPPED",
  "INTERRUPTED",
  "UNKNOWN",
] as const;

/** The statuses of a revision that failed (the ones a list filter for failures asks for). */
export const FAILED_STATUSES = ["CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED"] as const;

// Compile-time checks that the lists hold exactly the states of the generated API types.
type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const deploymentStatusesExact: Exact<(typeof DEPLOYMENT_STATUSES)[number], Deployment["status"]> = true;
const revisionStatusesExact: Exact<(typeof REVISION_STATUSES)[number], Revision["status"]> = true;
void deploymentStatusesExact;
void revisionStatusesExact;
