/**
 * Revision and deployment state machines as data. Every status write goes through
 * `assertTransition`, so a bug shows up as a refused transition instead of a wrong state.
 */
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
export type RevisionStatus = (typeof REVISION_STATUSES)[number];

export const TERMINAL_REVISION_STATUSES: ReadonlySet<RevisionStatus> = new Set([
  "DEPLOYED",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "SKIPPED",
  "INTERRUPTED",
]);

const IN_PROGRESS: RevisionStatus[] = [
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
];

/** from → the statuses it may move to. */
export const REVISION_TRANSITIONS: Readonly<Record<RevisionStatus, readonly RevisionStatus[]>> = {
  CREATING: ["QUEUED", "CREATE_FAILED", "INTERRUPTED", "SKIPPED"],
  QUEUED: ["AWAITING_BUILD", "CREATE_FAILED", "SKIPPED", "INTERRUPTED", "UNKNOWN"],
  AWAITING_BUILD: ["BUILDING", "CREATE_FAILED", "SKIPPED", "INTERRUPTED", "UNKNOWN"],
  BUILDING: ["AWAITING_DEPLOY", "BUILD_FAILED", "INTERRUPTED", "UNKNOWN"],
  AWAITING_DEPLOY: ["DEPLOYING", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED", "UNKNOWN"],
  DEPLOYING: ["DEPLOYED", "DEPLOY_FAILED", "INTERRUPTED", "UNKNOWN"],
  // The data plane came back: the revision resumes where it is, or ends.
  UNKNOWN: [...IN_PROGRESS, "DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "INTERRUPTED"],
  DEPLOYED: [],
  CREATE_FAILED: [],
  BUILD_FAILED: [],
  DEPLOY_FAILED: [],
  SKIPPED: [],
  INTERRUPTED: [],
};

export const DEPLOYMENT_STATUSES = [
  "AWAITING_DATABASE",
  "READY",
  "UNUSED",
  "AWAITING_DELETE",
  "UNKNOWN",
] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

export const DEPLOYMENT_TRANSITIONS: Readonly<Record<DeploymentStatus, readonly DeploymentStatus[]>> = {
  AWAITING_DATABASE: ["READY", "AWAITING_DELETE", "UNKNOWN"],
  READY: ["UNUSED", "AWAITING_DELETE", "UNKNOWN"],
  UNUSED: ["READY", "AWAITING_DELETE", "UNKNOWN"],
  UNKNOWN: ["READY", "UNUSED", "AWAITING_DATABASE", "AWAITING_DELETE"],
  AWAITING_DELETE: [],
};

export class InvalidTransition extends Error {
  constructor(kind: string, from: string, to: string) {
    super(`${kind} cannot move from ${from} to ${to}`);
  }
}

export function canTransition(from: RevisionStatus, to: RevisionStatus): boolean {
  return REVISION_TRANSITIONS[from].includes(to);
}

export function assertTransition(from: RevisionStatus, to: RevisionStatus): void {
  if (!canTransition(from, to)) throw new InvalidTransition("revision", from, to);
}

export function assertDeploymentTransition(from: DeploymentStatus, to: DeploymentStatus): void {
  if (from !== to && !DEPLOYMENT_TRANSITIONS[from].includes(to))
    throw new InvalidTransition("deployment", from, to);
}

export const isTerminal = (s: RevisionStatus) => TERMINAL_REVISION_STATUSES.has(s);

/**
 * Statuses whose reason a revision record shows in `status_message`, with the reason said when the
 * writer gave none; every other status clears it.
 */
const EXPLAINED: ReadonlyMap<RevisionStatus, string> = new Map<RevisionStatus, string>([
  ["CREATE_FAILED", "The source could not be resolved."],
  ["BUILD_FAILED", "The build failed."],
  ["DEPLOY_FAILED", "The app did not start."],
  ["UNKNOWN", "The data plane stopped reporting."],
  ["INTERRUPTED", "Interrupted by request."],
  ["SKIPPED", "A newer revision was queued before this one started."],
]);
const MAX_MESSAGE = 300;

/**
 * The one-line `status_message` of a revision moving to `status`: the reason alone (clients print
 * it after the status themselves: "INTERRUPTED: Interrupted by request.") for a status that needs
 * explaining, null for the others (a revision that is fine has none).
 */
export function statusMessage(status: RevisionStatus, reason: string | undefined): string | null {
  const fallback = EXPLAINED.get(status);
  if (fallback === undefined) return null;
  const line = (reason ?? "").replace(/\s+/g, " ").trim();
  const text = line === "" ? fallback : line;
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE - 1)}…` : text;
}

/** Statuses a worker can pick up: in progress, or UNKNOWN (a fault or a dead worker) to retry. */
export const CLAIMABLE: readonly RevisionStatus[] = [...IN_PROGRESS, "UNKNOWN"];

/** Statuses in which a worker was mid-way: a new claim restarts them from prepare. */
export const MID_WAY: ReadonlySet<RevisionStatus> = new Set([
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
]);
