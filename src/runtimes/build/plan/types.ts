/**
 * A build plan: what Slipway detected in a source and what it will run, decided before any command
 * runs and written to the build log. Both runtimes build from it: the local runtime runs the steps
 * in the sandbox (or builds the Dockerfile), the remote builder turns it into an image.
 */

/** One command of the build, run through `sh -c` in the app directory. */
export interface BuildStep {
  /** What the step is for, in log lines and failures: "install", "build", "dependencies", … */
  label: string;
  command: string;
}

/**
 * What a build installs that a later build of the same deployment may reuse: the directories the
 * install fills, and the files whose content decides whether they are still right.
 */
export interface DependencyCache {
  /** Directories relative to the app directory (`node_modules`, `.venv`, …). */
  dirs: string[];
  /** Files relative to the app directory whose bytes key the cache (lockfiles, requirements). */
  keyFiles: string[];
}

/** What every kind of plan carries. */
interface PlanBase {
  /** The log line's words after "slipway: detected ", e.g. `node (package-lock.json): npm ci; start: npm start`. */
  summary: string;
  /** Install and build commands, in order. */
  steps: BuildStep[];
  /** The app config's `env`, resolved (a dotenv path read): baked into images, given to processes. */
  env: Record<string, string>;
  healthcheck: string;
  /** App config `healthcheck_timeout_s`; the server's maximum bounds it at activation. */
  healthTimeoutS?: number;
  /** The dependencies a later build may reuse, when the language has a lockfile to key them. */
  cache?: DependencyCache;
  /** Environment the steps and the app need beyond the app config's (a virtualenv's PATH, …). */
  toolchainEnv: Record<string, string>;
}

/** An app that runs as processes: the API process and, when named, queue workers. */
export interface ProcessPlan extends PlanBase {
  kind: "process";
  language: string;
  start: string;
  worker?: string;
  /** `"redis": true`: the app asks for its own Redis. */
  redis?: boolean;
  /** The framework config's `dockerfile_lines`: appended when an image is built from this plan. */
  dockerfileLines?: string[];
}

/** Files Slipway serves itself, with no app process: a build's output or a plain site. */
export interface StaticPlan extends PlanBase {
  kind: "static";
  language: string;
  /** The directory served, relative to the app directory (it holds index.html). */
  root: string;
  /** A single-page app: a missing path without an extension is answered with index.html. */
  spa?: boolean;
}

/** A source built by its own Dockerfile (or Containerfile) into an image, run as a container. */
export interface DockerfilePlan extends PlanBase {
  kind: "dockerfile";
  /** The file, relative to the app directory. */
  file: string;
  /** `--build-arg`s from the app config (never secrets: those reach the container at run time). */
  buildArgs: Record<string, string>;
  /** The framework config's `dockerfile_lines`, appended to the file. */
  extraLines: string[];
}

export type BuildPlan = ProcessPlan | StaticPlan | DockerfilePlan;
