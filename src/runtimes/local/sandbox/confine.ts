import { chmod, chown, mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxMode, UidRange } from "../../../config.ts";
import type { RevisionSpec } from "../../interface.ts";
import type { Spawnable, Wrap } from "../../shared/exec.ts";
import type { Layout } from "../../shared/layout.ts";
import { allowedDestinations } from "../network/allowed.ts";
import { gatedDatabaseUri } from "../network/database.ts";
import { type DeploymentNetwork, NetworkNamespaces } from "../network/namespace.ts";
import { probeNetworkNamespaces } from "../network/probe.ts";
import { offFor, type ProtectionCheck, type ProtectionProbe, runProbes } from "../protections/probes.ts";
import { NO_SANDBOX_REFUSAL, protectionRefusal, startRefusal } from "../protections/refusals.ts";
import { baseEnv } from "./env.ts";
import { chownFreshTree, chownTree } from "./handover.ts";
import { hostLauncher, inNamespace } from "./launcher.ts";
import { choosePidsLimit, type PidsLimiter } from "./pids-limit.ts";
import {
  bwrapArgs,
  type Confinement,
  chooseSandbox,
  identityFiles,
  runsAsRoot,
  SANDBOX_APP_DIR,
  SANDBOX_HOME,
  type SandboxChoice,
} from "./sandbox.ts";
import { generateSeccompFilter } from "./seccomp/generate.ts";
import { UidAllocator } from "./uids.ts";

/**
 * Probes of the parts that live elsewhere, run at start beside the pids limit and seccomp, which
 * the sandbox probes itself. Add a part's probe here; one that needs the runtime's state (container
 * isolation: its engine and network) is added by runtime.ts.
 */
export const OTHER_PROTECTION_PROBES: readonly ProtectionCheck[] = [probeNetworkNamespaces];

/** How one deployment's commands are started: confined (or not) and with which base environment. */
export interface Confined {
  wrap: Wrap;
  /** PATH, HOME, npm cache … as the command sees them. */
  env: Record<string, string>;
  sandboxed: boolean;
  /** The deployment's own network namespace; undefined: the host's network. */
  network?: DeploymentNetwork;
}

/** SLIPWAY_APP_EGRESS and SLIPWAY_APP_EGRESS_ALLOW; `namespaces` (tests) overrides the default one. */
export interface EgressPolicy {
  egress: "internet" | "none";
  egressAllow: string[];
  /** config.sandbox.mirrors (network/allowed.ts); none given: npm's own registry. */
  mirrors?: readonly string[];
  namespaces?: NetworkNamespaces;
}

/** The pids limit, seccomp filter and other protections' probes (tests name missing tools). */
export interface ProtectionOptions {
  /** SLIPWAY_APP_PIDS_MAX (default 512). */
  pidsMax?: number;
  /** false: as if no pids cgroup were writable here. */
  pidsCgroups?: boolean;
  /** The program that sets RLIMIT_NPROC (default `prlimit`). */
  prlimit?: string;
  /** The Python with libseccomp's binding that compiles the filter (default `python3`). */
  python?: string;
  /** Probes of the other parts (default OTHER_PROTECTION_PROBES). */
  otherProbes?: readonly ProtectionCheck[];
}

/** The sandbox and the protections around it, decided once at start. */
export interface ConfinerChoice extends SandboxChoice {
  /** Every protection's probe: pids limit and seccomp (with a sandbox), then the other parts'. */
  probes: ProtectionProbe[];
  /** The compiled seccomp filter bubblewrap loads, when the probe is on. */
  seccompFilter?: string;
  pids?: PidsLimiter;
}

/**
 * The local runtime's side of the sandbox: decides once whether there is one, gives each
 * deployment its HOME, its uid (as root) and its /etc/passwd, and wraps its commands.
 */
export class Confiner {
  private choice: Promise<ConfinerChoice> | undefined;
  private networking: Promise<{ probe: ProtectionProbe; namespaces?: NetworkNamespaces }> | undefined;
  private readonly uids: UidAllocator;

  constructor(
    private readonly layout: Layout,
    private readonly mode: SandboxMode,
    private readonly range: UidRange,
    private readonly protection: ProtectionOptions = {},
    private readonly egress: EgressPolicy = { egress: "internet", egressAllow: [] },
  ) {
    this.uids = new UidAllocator(layout, range);
  }

  /**
   * Whether sandboxed commands get a network namespace per deployment (probed once): only with a
   * sandbox, as root, with `ip`, `nft` and `nsenter`. Off: the host's network, as before.
   */
  network(): Promise<{ probe: ProtectionProbe; namespaces?: NetworkNamespaces }> {
    this.networking ??= (async () => {
      const probe = await probeNetworkNamespaces();
      if (!probe.ok || (await this.choose()).system === undefined) return { probe };
      const { egress, egressAllow } = this.egress;
      const allow = await allowedDestinations({ egress, egressAllow, mirrors: this.egress.mirrors ?? [] });
      const mirrors = this.egress.mirrors ?? [];
      return {
        probe,
        namespaces: this.egress.namespaces ?? new NetworkNamespaces({ egress, allow, mirrors }),
      };
    })();
    return this.networking;
  }

  /**
   * The app's environment with DATABASE_URI and POSTGRES_URI pointing at the deployment's gate
   * (when it has a namespace and the reconciler provisioned its database); otherwise `env` as it is.
   */
  async gateDatabase(deploymentId: string, env: Record<string, string>): Promise<Record<string, string>> {
    const { namespaces } = await this.network();
    const uri = env.DATABASE_URI;
    if (namespaces === undefined || uri === undefined) return env;
    const gated = await gatedDatabaseUri(namespaces, deploymentId, uri);
    if (gated === undefined) return env;
    const out: Record<string, string> = { ...env, DATABASE_URI: gated };
    if (env.POSTGRES_URI === uri) out.POSTGRES_URI = gated;
    return out;
  }

  /** The deployment's namespace when namespaces are on (made on first use). */
  async networkOf(deploymentId: string): Promise<DeploymentNetwork | undefined> {
    const { namespaces } = await this.network();
    return namespaces?.ensure(deploymentId);
  }

  /** Removes the deployment's namespace and gate (teardown, after its processes have ended). */
  async removeNetwork(deploymentId: string): Promise<void> {
    const { namespaces } = await this.network();
    await namespaces?.remove(deploymentId);
  }

  /** Removes every namespace made here (close, after every app process has stopped). */
  async closeNetworks(): Promise<void> {
    if (this.networking === undefined) return;
    const { namespaces } = await this.networking;
    await namespaces?.closeAll();
  }

  /**
   * The sandbox and protections in use, probed on first call; throws when SLIPWAY_SANDBOX=bwrap
   * cannot work or a protection is off.
   */
  choose(): Promise<ConfinerChoice> {
    this.choice ??= this.decide();
    return this.choice;
  }

  private async decide(): Promise<ConfinerChoice> {
    const others = runProbes(this.protection.otherProbes ?? OTHER_PROTECTION_PROBES);
    const sandbox = await chooseSandbox(
      this.mode,
      runsAsRoot() ? { uid: this.range.first, gid: this.range.first } : undefined,
    );
    if (sandbox.system === undefined) return { ...sandbox, probes: await others };
    const [filter, pids] = await Promise.all([
      generateSeccompFilter(join(this.layout.dataDir, "runtime", "seccomp.bpf"), this.protection.python),
      choosePidsLimit({
        max: this.protection.pidsMax ?? 512,
        cgroups: this.protection.pidsCgroups,
        prlimit: this.protection.prlimit,
        root: runsAsRoot(),
      }),
    ]);
    const probes = [pids.probe, filter.probe, ...(await others)];
    const off = probes.filter((p) => !p.ok);
    if (this.mode === "bwrap" && off.length > 0) throw new Error(startRefusal(off));
    return { ...sandbox, probes, seccompFilter: filter.path, pids };
  }

  /** Why this revision may not run here (another organization's code, a protection off), if so. */
  async refusal(spec: RevisionSpec): Promise<string | undefined> {
    if (spec.trusted) return undefined;
    const choice = await this.choose();
    if (spec.source.kind !== "image" && choice.system === undefined) return NO_SANDBOX_REFUSAL;
    const off = offFor(choice.probes, spec.source.kind === "image" ? "image" : "process");
    return off.length > 0 ? protectionRefusal(off) : undefined;
  }

  /**
   * How commands of `deploymentId` run in `appDir` (writable while building). As root, building
   * hands the tree and HOME to the deployment's uid first.
   */
  async confine(deploymentId: string, appDir: string, writable: boolean): Promise<Confined> {
    const { system, pids, seccompFilter } = await this.choose();
    const home = this.layout.deploymentHome(deploymentId);
    await mkdir(home, { recursive: true });
    if (system === undefined) {
      return {
        sandboxed: false,
        env: baseEnv(home),
        wrap: ([file = "sh", ...args]) => ({ file, args, cwd: appDir }),
      };
    }
    const identity = runsAsRoot() ? await this.identity(deploymentId) : undefined;
    const ids = identity ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const etc = this.layout.etcDir(deploymentId);
    await mkdir(etc, { recursive: true });
    const files = identityFiles(ids.uid, ids.gid);
    await writeFile(join(etc, "passwd"), files.passwd, { mode: 0o644 });
    await writeFile(join(etc, "group"), files.group, { mode: 0o644 });
    if (identity !== undefined) {
      // Only the deployment's uid may enter them, even if another uid found the way on the host.
      if (writable) {
        await chownFreshTree(appDir, identity.uid, identity.gid);
        await chmod(appDir, 0o700);
        // HOME is written only by the deployment's own processes once it is theirs; the app may be
        // running and changing it now, so only `chown -hR` (which never follows a link) walks it,
        // and only when it is not theirs yet (made just now, or the deployment's uid changed).
        const owner = await stat(home);
        if (owner.uid !== identity.uid || owner.gid !== identity.gid) {
          await chownTree(home, identity.uid, identity.gid);
        }
      } else {
        await chown(home, identity.uid, identity.gid);
      }
      await chmod(home, 0o700);
    }
    const c: Confinement = {
      appDir,
      writable,
      homeDir: home,
      passwd: join(etc, "passwd"),
      group: join(etc, "group"),
      identity,
    };
    const pidsJoin = (await pids?.prepare(deploymentId)) ?? { prefix: [] };
    const network = await this.networkOf(deploymentId);
    const launcher = (argv: string[]): Spawnable =>
      hostLauncher(pidsJoin, seccompFilter, { file: "bwrap", args: bwrapArgs(system, c, argv), cwd: "/" });
    return {
      sandboxed: true,
      env: baseEnv(SANDBOX_HOME, system.path),
      wrap: network === undefined ? launcher : (argv) => inNamespace(network, launcher(argv)),
      network,
    };
  }

  /** The deployment's uid as the host sees it; undefined unless Slipway is root with a sandbox. */
  async uidOf(deploymentId: string): Promise<number | undefined> {
    if (!runsAsRoot() || (await this.choose()).system === undefined) return undefined;
    return this.uids.uidFor(deploymentId);
  }

  /** Gives the deployment's uid and pids group back (teardown, after its processes and files are gone). */
  async release(deploymentId: string): Promise<void> {
    const choice = await this.choice?.catch(() => undefined);
    // A group left behind holds no process (they were reaped) and is made again on next use.
    await choice?.pids?.release(deploymentId).catch(() => undefined);
    await this.uids.release(deploymentId);
  }

  /** The runtime closes, its processes ended: pids groups left empty go. */
  async close(): Promise<void> {
    const choice = await this.choice?.catch(() => undefined);
    await choice?.pids?.removeEmpty();
  }

  private async identity(deploymentId: string): Promise<{ uid: number; gid: number }> {
    const uid = await this.uids.uidFor(deploymentId);
    return { uid, gid: uid };
  }

  /**
   * Log lines shown to tenants name paths as the app sees them, never the host's: the revision's
   * tree is /app, the deployment's HOME /home/app, anything else in the data dir `<data dir>`.
   */
  hidePaths(deploymentId: string, revisionId: string): (line: string) => string {
    const swaps: [string, string][] = [
      [this.layout.appDir(deploymentId, revisionId), SANDBOX_APP_DIR],
      [this.layout.deploymentHome(deploymentId), SANDBOX_HOME],
      [this.layout.dataDir, "<data dir>"],
    ];
    return (line) => {
      let out = line;
      for (const [host, shown] of swaps) if (out.includes(host)) out = out.split(host).join(shown);
      return out;
    };
  }
}
