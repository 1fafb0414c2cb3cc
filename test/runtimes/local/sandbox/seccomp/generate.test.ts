import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { generateSeccompFilter } from "../../../../../src/runtimes/local/sandbox/seccomp/generate.ts";
import { DENIED_SYSCALLS } from "../../../../../src/runtimes/local/sandbox/seccomp/profile.ts";
import { bwrapSkip } from "../../../../helpers/bwrap.ts";
import {
  cleanupTemp,
  newRuntime,
  phase,
  spec,
  tempDir,
  writeApp,
} from "../../../../helpers/local-runtime.ts";

const RANGE = { first: 313_000, last: 313_099 };
const skip = await bwrapSkip(RANGE);

/** keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) by number: no keyutils needed. */
const KEYCTL_NR: Partial<Record<NodeJS.Architecture, number>> = { x64: 250, arm64: 219 };
const keyctlNr = KEYCTL_NR[process.arch];

/** What a sandboxed build reports: seccomp mode, a keyctl call, a new user namespace. */
const PROBES = [
  "grep '^Seccomp:' /proc/self/status",
  `/usr/bin/python3 -c 'import ctypes, os; l = ctypes.CDLL(None, use_errno=True); r = l.syscall(${keyctlNr ?? -1}, 0, -3, 0); print("keyctl:", "ok" if r >= 0 else os.strerror(ctypes.get_errno()))'`,
  "if unshare -U true; then echo userns: ok; else echo userns: refused; fi",
  "if unshare -r -U true; then echo rootmap: ok; else echo rootmap: refused; fi",
  "node -e 'console.log(\"node: ok\")'",
].join("; ");

async function buildProbe(python?: string) {
  const rt = newRuntime(tempDir(), {
    sandbox: python === undefined ? "bwrap" : "auto",
    uidRange: RANGE,
    protections: python === undefined ? {} : { python },
  });
  after(() => rt.close());
  const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { installCommand: PROBES });
  const ctx = phase();
  await rt.prepare(s, ctx);
  await rt.build(s, ctx);
  await rt.teardown(s.deploymentId);
  return ctx.lines.build;
}

describe("seccomp filter of sandboxed builds and apps", () => {
  after(cleanupTemp);

  it("libseccomp compiles it into the data dir; every denied call is known to it", async () => {
    const dir = tempDir();
    const filter = await generateSeccompFilter(join(dir, "runtime", "seccomp.bpf"));
    assert.equal(filter.probe.ok, true, filter.probe.detail);
    assert.equal(filter.probe.protection, "seccomp");
    assert.ok(filter.path !== undefined && statSync(filter.path).size > 0);
    // BPF instructions are 8 bytes each.
    assert.equal(statSync(filter.path).size % 8, 0);
    // Names unknown to libseccomp would silently be left out: only pseudo-calls of other ABIs may be.
    const known = new Set([
      "stime",
      "umount",
      "create_module",
      "get_kernel_syms",
      "query_module",
      "uselib",
      "_sysctl",
      "nfsservctl",
    ]);
    assert.deepEqual(
      filter.skipped?.filter((n) => !known.has(n)),
      [],
    );
    assert.ok(DENIED_SYSCALLS.includes("keyctl") && DENIED_SYSCALLS.includes("bpf"));
  });

  it("without libseccomp's Python binding the probe is off, naming the package; nothing is written", async () => {
    const dir = tempDir();
    const path = join(dir, "seccomp.bpf");
    const filter = await generateSeccompFilter(path, "python3-not-installed");
    assert.equal(filter.probe.ok, false);
    assert.match(filter.probe.detail, /python3-not-installed not found/);
    assert.match(filter.probe.detail, /apt-get install python3-seccomp/);
    assert.equal(filter.path, undefined);
    assert.equal(existsSync(path), false);
  });

  it("inside the sandbox keyctl and unshare -U fail; node still runs", { skip }, async () => {
    const lines = await buildProbe();
    const text = lines.join("\n");
    assert.ok(lines.includes("Seccomp:\t2"), text);
    if (keyctlNr !== undefined) assert.ok(lines.includes("keyctl: Operation not permitted"), text);
    assert.ok(lines.includes("userns: refused"), text);
    assert.ok(lines.includes("rootmap: refused"), text);
    assert.ok(lines.includes("node: ok"), text);
  });

  it("with the filter off (no generator, SLIPWAY_SANDBOX=auto) the same calls succeed: the filter is what refuses them", {
    skip,
  }, async () => {
    const lines = await buildProbe("python3-not-installed");
    const text = lines.join("\n");
    assert.ok(lines.includes("Seccomp:\t0"), text);
    if (keyctlNr !== undefined) assert.ok(lines.includes("keyctl: ok"), text);
    assert.ok(lines.includes("userns: ok"), text);
  });
});
