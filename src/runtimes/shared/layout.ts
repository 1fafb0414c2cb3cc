import { join } from "node:path";

/** Ids become directory names; anything but a plain token would let a caller escape the data dir. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

function segment(kind: string, id: string): string {
  if (!SAFE_ID.test(id)) throw new Error(`${kind} id "${id}" is not usable as a directory name`);
  return id;
}

/**
 * Where the local runtime keeps its files under the data dir:
 *   apps/<deploymentId>/<revisionId>/app/         the revision's source tree, built in place
 *   apps/<deploymentId>/<revisionId>/build.json   the resolved app config, written last by build
 *   apps/<deploymentId>/processes.json            its live process groups (see local/processes/orphans.ts)
 *   apps/<deploymentId>/home/                     the deployment's HOME (npm cache in .npm)
 *   apps/<deploymentId>/uid, etc/                 its sandbox uid and /etc/passwd, /etc/group
 *   apps/<deploymentId>/redis/                    its own Redis's data (when it has one)
 *   apps/<deploymentId>/cache/entry/              its last install's dependencies (local/build-cache.ts)
 *   runtime/home                                  HOME of Slipway's own git commands
 *   runtime/uids/<uid>                            which deployment holds a uid (see local/sandbox/uids.ts)
 */
export class Layout {
  constructor(readonly dataDir: string) {}

  get appsDir(): string {
    return join(this.dataDir, "apps");
  }

  deploymentDir(deploymentId: string): string {
    return join(this.appsDir, segment("deployment", deploymentId));
  }

  revisionDir(deploymentId: string, revisionId: string): string {
    return join(this.deploymentDir(deploymentId), segment("revision", revisionId));
  }

  appDir(deploymentId: string, revisionId: string): string {
    return join(this.revisionDir(deploymentId, revisionId), "app");
  }

  buildRecord(deploymentId: string, revisionId: string): string {
    return join(this.revisionDir(deploymentId, revisionId), "build.json");
  }

  /** The deployment's live process groups, so a restarted Slipway can end what a killed one left. */
  processRecord(deploymentId: string): string {
    return join(this.deploymentDir(deploymentId), "processes.json");
  }

  /** HOME of Slipway's own git commands (never a build's or an app's). */
  get homeDir(): string {
    return join(this.dataDir, "runtime", "home");
  }

  /** The deployment's own HOME: builds and apps of one deployment share it, nobody else does. */
  deploymentHome(deploymentId: string): string {
    return join(this.deploymentDir(deploymentId), "home");
  }

  /** The data of the deployment's own Redis, kept across revisions, removed by teardown. */
  redisDir(deploymentId: string): string {
    return join(this.deploymentDir(deploymentId), "redis");
  }

  /** The uid the deployment runs as (Slipway as root with a sandbox). */
  uidFile(deploymentId: string): string {
    return join(this.deploymentDir(deploymentId), "uid");
  }

  /** The deployment's sandbox /etc/passwd and /etc/group. */
  etcDir(deploymentId: string): string {
    return join(this.deploymentDir(deploymentId), "etc");
  }

  get uidClaimsDir(): string {
    return join(this.dataDir, "runtime", "uids");
  }
}
