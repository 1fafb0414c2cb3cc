import { execFile } from "node:child_process";
import { mkdir, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { ProtectionProbe } from "../../protections/probes.ts";
import { defaultFilterSpec, type FilterSpec } from "./profile.ts";

/**
 * The filter is compiled to BPF by libseccomp (through its Python binding, Debian's
 * python3-seccomp), not written by hand: libseccomp knows each architecture's syscall numbers,
 * checks the architecture of every call (a 32-bit call cannot slip past a 64-bit number) and
 * orders the rules. It is generated at each start into the data dir; bwrap loads it with
 * `--seccomp FD` just before the sandboxed command runs.
 */

/** Reads the spec (JSON, argv[1]) and writes the BPF program to argv[2]; prints what it skipped. */
const GENERATOR = `
import errno, json, sys
import seccomp

spec = json.loads(sys.argv[1])
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
native = seccomp.system_arch() & 0xffffffff
# The 32-bit ABIs the kernel also accepts on this machine get the same rules (as Docker does).
compat = {
    seccomp.Arch.X86_64 & 0xffffffff: ["X86", "X32"],
    seccomp.Arch.AARCH64 & 0xffffffff: ["ARM"],
}
for name in compat.get(native, []):
    try:
        f.add_arch(getattr(seccomp.Arch, name))
    except Exception:
        pass
skipped = []
def rule(action, name, *args):
    try:
        f.add_rule(action, name, *args)
    except Exception:
        skipped.append(name)
for name in spec["deny"]:
    rule(seccomp.ERRNO(errno.EPERM), name)
for item in spec["denyWithFlag"]:
    flag = item["flag"]
    rule(seccomp.ERRNO(errno.EPERM), item["syscall"], seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
for name in spec["unsupported"]:
    rule(seccomp.ERRNO(errno.ENOSYS), name)
with open(sys.argv[2], "wb") as out:
    f.export_bpf(out)
print(json.dumps({"skipped": sorted(set(skipped))}))
`;

export interface SeccompFilter {
  probe: ProtectionProbe;
  /** The compiled BPF program, when `probe.ok`. */
  path?: string;
  /** Names this machine's libseccomp does not know (old kernels' headers): not in the filter. */
  skipped?: string[];
}

const INSTALL_HINT = "install libseccomp's Python binding (Debian: apt-get install python3-seccomp)";

function runPython(python: string, args: string[]): Promise<{ out: string; error?: string }> {
  return new Promise((resolve) => {
    // System PATH only: a user's pyenv or venv python lacks the Debian binding.
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin" };
    execFile(python, args, { timeout: 30_000, env }, (err, stdout, stderr) => {
      if (err === null) return resolve({ out: String(stdout) });
      const lines = String(stderr).trim().split("\n");
      resolve({ out: "", error: lines[lines.length - 1] || err.message });
    });
  });
}

/**
 * Compiles the filter to `path` with `python` (default `python3`). Never throws: a machine that
 * cannot compile it gets a probe that is off, saying why and what to install.
 */
export async function generateSeccompFilter(
  path: string,
  python = "python3",
  spec: FilterSpec = defaultFilterSpec(),
): Promise<SeccompFilter> {
  const protection = "seccomp";
  const partial = `${path}.${process.pid}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const { out, error } = await runPython(python, ["-c", GENERATOR, JSON.stringify(spec), partial]);
    if (error !== undefined) {
      const why = /No module named .?seccomp/.test(error)
        ? `${python} has no seccomp module`
        : /ENOENT/.test(error)
          ? `${python} not found`
          : `${python} could not compile the filter (${error})`;
      return { probe: { protection, ok: false, detail: `${why}: ${INSTALL_HINT}` } };
    }
    // Written whole, then renamed: a sandbox starting meanwhile never reads half a program.
    await rename(partial, path);
    const parsed: unknown = JSON.parse(out.trim().split("\n").pop() ?? "{}");
    const skipped =
      typeof parsed === "object" && parsed !== null && "skipped" in parsed && Array.isArray(parsed.skipped)
        ? parsed.skipped.map(String)
        : [];
    const detail = `libseccomp filter on every sandboxed build and app (${spec.deny.length} calls refused, new namespaces too)`;
    return { probe: { protection, ok: true, detail }, path, skipped };
  } catch (err) {
    return {
      probe: { protection, ok: false, detail: `could not write the filter (${(err as Error).message})` },
    };
  } finally {
    await rm(partial, { force: true });
  }
}
