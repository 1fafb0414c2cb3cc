import { execFile } from "node:child_process";
import { mkdir, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type CgroupSupport, controllerSupport, removeCgroup } from "../processes/cgroup.ts";
import type { ProtectionProbe } from "../protections/probes.ts";

/**
 * How many processes one deployment may run at once, its builds, apps, workers and Redis together
 * (SLIPWAY_APP_PIDS_MAX): the kernel's pids controller on one cgroup per deployment, which every
 * sandboxed command joins before bubblewrap starts; else, with Slipway as root (so each deployment
 * has a host uid of its own), RLIMIT_NPROC on that uid. Where neither works the limit is off.
 *
 * cgroup v2 keeps a process in one group only: joining the deployment's group would take a replica
 * out of its memory and cpu groups (processes/replica.ts), so v2 is used only where those are not on v2.
 */

export interface PidsOptions {
  max: number;
  /** false: act as if no pids cgroup were writable here (tests of the rlimit and off paths). */
  cgroups?: boolean;
  /** The `prlimit` program (util-linux) that sets RLIMIT_NPROC; tests name a missing one. */
  prlimit?: string;
  /** Whether Slipway runs as root (each deployment its own uid). */
  root: boolean;
}

/** What a host-side launcher does for one deployment before it starts bubblewrap. */
export interface PidsJoin {
  /** `cgroup.procs` to write the launcher's pid to. */
  procsPath?: string;
  /** Program and arguments to run bubblewrap through. */
  prefix: string[];
}

export interface PidsLimiter {
  probe: ProtectionProbe;
  /** Makes (or refreshes) the deployment's group; what its launchers must do. */
  prepare(deploymentId: string): Promise<PidsJoin>;
  /** Removes the deployment's group (teardown, its processes gone). */
  release(deploymentId: string): Promise<void>;
  /** Removes the groups this process made that hold no process any more (the runtime closes). */
  removeEmpty(): Promise<void>;
}

const PROTECTION = "pids limit";
const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

function groupPath(support: CgroupSupport, deploymentId: string): string {
  if (!ID.test(deploymentId))
    throw new Error(`deployment id "${deploymentId}" is not usable as a cgroup name`);
  return join(support.parent, `slipway-pids-${deploymentId}`);
}

function works(program: string, args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      program,
      args,
      { timeout: 10_000, env: { PATH: "/usr/local/bin:/usr/bin:/bin" } },
      (err, _o, e) => {
        if (err === null) return resolve(undefined);
        resolve((String(e).trim().split("\n")[0] || err.message).slice(0, 200));
      },
    );
  });
}

/** The pids cgroup support usable alongside the memory and cpu groups, if any. */
async function pidsCgroup(): Promise<CgroupSupport | undefined> {
  const pids = await controllerSupport("pids");
  if (pids?.version !== 2) return pids;
  const others = await Promise.all([controllerSupport("memory"), controllerSupport("cpu")]);
  return others.some((o) => o?.version === 2) ? undefined : pids;
}

/** Decides how the limit is applied here (once, at start); never throws. */
export async function choosePidsLimit(o: PidsOptions): Promise<PidsLimiter> {
  const max = o.max;
  const support = o.cgroups === false ? undefined : await pidsCgroup();
  if (support !== undefined) {
    const made = new Set<string>();
    return {
      probe: {
        protection: PROTECTION,
        ok: true,
        detail: `${max} processes per deployment (cgroup v${support.version} pids controller)`,
      },
      prepare: async (deploymentId) => {
        const path = groupPath(support, deploymentId);
        await mkdir(path, { recursive: true });
        await writeFile(join(path, "pids.max"), String(max));
        made.add(path);
        return { procsPath: join(path, "cgroup.procs"), prefix: [] };
      },
      release: async (deploymentId) => {
        const path = groupPath(support, deploymentId);
        made.delete(path);
        await removeCgroup(path, support.parent);
      },
      // rmdir fails (EBUSY) while a process is in the group: apps that outlive Slipway keep theirs.
      removeEmpty: async () => {
        await Promise.all(
          [...made].map((path) =>
            rmdir(path).then(
              () => made.delete(path),
              () => undefined,
            ),
          ),
        );
      },
    };
  }
  const noCgroup = "no writable pids cgroup here";
  const fix =
    "run Slipway as root, or in a cgroup v2 delegated to it with the pids controller (systemd: Delegate=yes)";
  const off = (detail: string): PidsLimiter => ({
    probe: { protection: PROTECTION, ok: false, detail },
    prepare: async () => ({ prefix: [] }),
    release: async () => {},
    removeEmpty: async () => {},
  });
  if (!o.root) {
    return off(`${noCgroup}, and RLIMIT_NPROC needs a uid per deployment (Slipway as root): ${fix}`);
  }
  const prlimit = o.prlimit ?? "prlimit";
  const failure = await works(prlimit, [`--nproc=${max}:${max}`, "--", "true"]);
  if (failure !== undefined) {
    return off(`${noCgroup}, and ${prlimit} does not work (${failure}): install util-linux, or ${fix}`);
  }
  return {
    probe: {
      protection: PROTECTION,
      ok: true,
      detail: `${max} processes per deployment (RLIMIT_NPROC on its own uid; no pids cgroup here)`,
    },
    // Set as root before bubblewrap; the limit counts every process of the deployment's uid.
    prepare: async () => ({ prefix: [prlimit, `--nproc=${max}:${max}`, "--"] }),
    release: async () => {},
    removeEmpty: async () => {},
  };
}
