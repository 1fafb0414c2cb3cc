import { canTransition, type RevisionStatus } from "../core/revisions/states.ts";
import { BuildError, DeployError, SourceError } from "../runtimes/interface.ts";

/** The claim ended under the worker: the API interrupted or skipped it, or another worker took it. */
export class LostClaim extends Error {
  constructor() {
    super("the revision is no longer leased to this worker in the expected status");
  }
}

/** Which failure status an error means, from the status the revision is in. */
export function failureStatus(err: unknown, current: RevisionStatus): RevisionStatus {
  const byError: RevisionStatus | undefined =
    err instanceof SourceError
      ? "CREATE_FAILED"
      : err instanceof BuildError
        ? "BUILD_FAILED"
        : err instanceof DeployError
          ? "DEPLOY_FAILED"
          : undefined;
  if (byError && canTransition(current, byError)) return byError;
  return phaseFailure(current);
}

/** The failure of the phase a status belongs to (used when the error says nothing more precise). */
export function phaseFailure(current: RevisionStatus): RevisionStatus {
  switch (current) {
    case "BUILDING":
      return "BUILD_FAILED";
    case "AWAITING_DEPLOY":
    case "DEPLOYING":
      return "DEPLOY_FAILED";
    default:
      return "CREATE_FAILED";
  }
}

export const isRuntimeFailure = (err: unknown) =>
  err instanceof SourceError || err instanceof BuildError || err instanceof DeployError;

export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
