import type { Readable } from "node:stream";
import type { LogStream } from "../core/revision-logs/store.ts";

/**
 * The data plane as the reconciler sees it. The reconciler owns state (rows, leases,
 * transitions); a runtime only does the work of one phase and reports by returning or throwing.
 * `local` runs processes on this machine; `kubernetes` will apply manifests; both implement this.
 */

/** Where a revision's code comes from, resolved by the reconciler before `prepare`. */
export type SourceLocation =
  /** A git repository (a local path or a URL with credentials); `commitSha` pins a redeploy. */
  | { kind: "git"; url: string; ref: string; commitSha?: string }
  /** An uploaded .tar.gz, read from the database. */
  | { kind: "tarball"; open: () => Promise<Readable> }
  /** A directory on this machine (built-in templates); copied, never built in place. */
  | { kind: "directory"; path: string }
  /** A container image. */
  | { kind: "image"; imageUri: string };

/** `deployment_type` of a deployment: it sets the scale and memory defaults a resource_spec leaves out. */
export type DeploymentType = "dev_free" | "dev" | "prod";

export interface RevisionSpec {
  deploymentId: string;
  /** The deployment's workspace (names the image a listener's build is pushed as). */
  workspaceId?: string;
  /** DNS-safe deployment name: the app is served at `<name>.<apps domain>`. */
  deploymentName: string;
  revisionId: string;
  source: SourceLocation;
  /** Path of the app config JSON inside the source (`framework_config_path`). */
  frameworkConfigPath?: string;
  installCommand?: string;
  buildCommand?: string;
  /** `source_config.resource_spec` of the revision (min_scale, memory limits, …). */
  resourceSpec: Record<string, unknown> | null;
  /** The deployment's type (defaults of the resource_spec; `dev` when not given). */
  deploymentType?: DeploymentType;
  /** Environment for the app: decrypted secrets, DATABASE_URI when provisioned. Never logged. */
  env: Record<string, string>;
  /**
   * The password of the deployment's own Redis, should the runtime run one (generated and stored
   * encrypted by the reconciler, so restarts keep it; hidden in logs). Never logged.
   */
  redisPassword?: string;
  /**
   * Whether the revision belongs to the install's first organization, the only one whose code may
   * run when no sandbox is usable (docs/sandbox.md).
   */
  trusted: boolean;
}

export interface PhaseContext {
  /** One line of build or deploy output; the caller stores it and redacts secrets. */
  log(stream: LogStream, line: string): void;
  /** Aborted when the revision is interrupted or the worker loses its lease: stop promptly. */
  signal: AbortSignal;
}

/** Failures the reconciler maps to a revision status; anything else is a fault (UNKNOWN + retry). */
export class SourceError extends Error {}
export class BuildError extends Error {}
export class DeployError extends Error {}

export interface PreparedSource {
  /** The commit that was checked out (git sources). */
  commitSha?: string;
}

export interface Activation {
  /** Where the deployment is served, for `source_config.custom_url`. */
  url: string;
  /** For image revisions: the deployment's `image_version` (null: the image names none). */
  imageVersion?: string | null;
}

/** One process of a deployment as `GET /v2/deployments/{id}/processes` shows it (no host pid). */
export interface ProcessInfo {
  /** `api`: serves requests behind the router; `queue`: runs the app config's `worker`, not routed. */
  type: "api" | "queue";
  /** 1, 2, … within its type and revision. */
  index: number;
  /** Stable for the life of the process slot (across restarts); not a pid. */
  id: string;
  revisionId: string;
  state: "starting" | "running" | "restarting" | "draining" | "stopped";
  restarts: number;
  /** When its current process started (ms since the epoch), undefined before the first start. */
  startedAt: number | undefined;
  /** Resident memory of everything it started, in bytes; undefined where it cannot be read. */
  memoryBytes: number | undefined;
}

export interface Runtime {
  readonly name: string;
  /**
   * Runs revisions elsewhere (a listener's cluster): no per-deployment database on this server's
   * PostgreSQL, and `secret_references` are resolved by that data plane, not from local files.
   */
  readonly remote?: boolean;
  /** Fetches the source into a fresh per-revision directory. Throws SourceError → CREATE_FAILED. */
  prepare(spec: RevisionSpec, ctx: PhaseContext): Promise<PreparedSource>;
  /** Installs and builds. Throws BuildError → BUILD_FAILED; leaves only logs behind on failure. */
  build(spec: RevisionSpec, ctx: PhaseContext): Promise<void>;
  /**
   * Starts the revision beside whatever serves now, waits until healthy, switches traffic, then
   * drains and stops the previous revision. Throws DeployError → DEPLOY_FAILED (the old one keeps
   * serving). Also used after a restart to bring an already-built active revision back.
   */
  activate(spec: RevisionSpec, ctx: PhaseContext): Promise<Activation>;
  /** Whether a revision's build output is present, so a restart can activate without rebuilding. */
  isBuilt(spec: RevisionSpec): Promise<boolean>;
  /** Stops everything of a deployment and removes its files. Idempotent. */
  teardown(deploymentId: string): Promise<void>;
  /** Removes one revision's files (a failed or superseded build). Idempotent. */
  discard(deploymentId: string, revisionId: string): Promise<void>;
  /** "running" while the active revision serves, "stopped" when nothing runs, "unknown" otherwise. */
  health(deploymentId: string): "running" | "stopped" | "unknown";
  /**
   * When the deployment last got a request here (epoch ms; undefined: none since this runtime
   * started). Runtimes that cannot tell leave it out; then only new revisions count as use (UNUSED).
   */
  lastRequestAt?(deploymentId: string): number | undefined;
  /** The processes of a deployment that run here now (empty when none do). */
  processes(deploymentId: string): Promise<ProcessInfo[]>;
  /** Stops all processes and listeners (Slipway shutdown); files stay for the next start. */
  close(): Promise<void>;
}
