import type { Spawnable } from "../../shared/exec.ts";
import type { DeploymentNetwork } from "../network/namespace.ts";
import type { PidsJoin } from "./pids-limit.ts";

// How a confined command is started on the host: the steps before bubblewrap, and the deployment's
// network namespace around them.

/**
 * What runs on the host before bubblewrap: joins the deployment's pids cgroup, opens the seccomp
 * filter as fd 3 (bwrap `--seccomp 3` reads and closes it), then execs bwrap, through `prlimit`
 * where RLIMIT_NPROC is the pids limit.
 */
export function hostLauncher(pids: PidsJoin, seccompFilter: string | undefined, bwrap: Spawnable): Spawnable {
  const params: string[] = [];
  const steps: string[] = [];
  if (pids.procsPath !== undefined) {
    params.push(pids.procsPath);
    steps.push(`echo $$ > "$${params.length}"`);
  }
  let args = bwrap.args;
  if (seccompFilter !== undefined) {
    params.push(seccompFilter);
    steps.push(`exec 3< "$${params.length}"`);
    args = ["--seccomp", "3", ...args];
  }
  if (steps.length === 0 && pids.prefix.length === 0) return bwrap;
  const script = [...steps, `shift ${params.length}`, 'exec "$@"'].join(" && ");
  return {
    file: "sh",
    args: ["-c", script, "sh", ...params, ...pids.prefix, bwrap.file, ...args],
    cwd: bwrap.cwd,
  };
}

/** Runs a sandbox inside a network namespace: nsenter joins it, then execs bwrap. */
export function inNamespace(net: DeploymentNetwork, s: Spawnable): Spawnable {
  return { file: "nsenter", args: [`--net=${net.path}`, "--", s.file, ...s.args], cwd: s.cwd };
}
