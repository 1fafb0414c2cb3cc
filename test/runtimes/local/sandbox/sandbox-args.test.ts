import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  bwrapArgs,
  type Confinement,
  chooseSandbox,
  type HostSystem,
  identityFiles,
} from "../../../../src/runtimes/local/sandbox/sandbox.ts";
import { UidAllocator } from "../../../../src/runtimes/local/sandbox/uids.ts";
import { Layout } from "../../../../src/runtimes/shared/layout.ts";
import { cleanupTemp, tempDir } from "../../../helpers/local-runtime.ts";

const SYSTEM: HostSystem = {
  readOnly: ["/usr", "/etc/resolv.conf", "/etc/ssl/certs", "/opt/node"],
  links: [{ path: "/bin", target: "usr/bin" }],
  path: "/usr/local/bin:/usr/bin:/bin",
};
const BASE: Confinement = {
  appDir: "/data/apps/d1/r1/app",
  writable: false,
  homeDir: "/data/apps/d1/home",
  passwd: "/data/apps/d1/etc/passwd",
  group: "/data/apps/d1/etc/group",
};

/** The values following each occurrence of `flag`, as tuples of `n` arguments. */
function after_(args: string[], flag: string, n: number): string[][] {
  const out: string[][] = [];
  args.forEach((a, i) => {
    if (a === flag) out.push(args.slice(i + 1, i + 1 + n));
  });
  return out;
}

describe("sandbox arguments (bwrapArgs)", () => {
  it("as root: PID, IPC, UTS namespaces, no user namespace, and setpriv to the deployment's uid with nothing kept", () => {
    const args = bwrapArgs(SYSTEM, { ...BASE, identity: { uid: 200_123, gid: 200_123 } }, [
      "sh",
      "-c",
      "npm start",
    ]);
    for (const f of ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]) assert.ok(args.includes(f), f);
    assert.ok(!args.includes("--unshare-all") && !args.includes("--unshare-user"));
    assert.ok(!args.includes("--unshare-net"), "the network stays shared");
    // Apps must outlive a killed Slipway, and stay in the process group we kill.
    assert.ok(!args.includes("--die-with-parent") && !args.includes("--new-session"));
    const sep = args.indexOf("--");
    assert.deepEqual(args.slice(sep + 1), [
      "setpriv",
      "--reuid=200123",
      "--regid=200123",
      "--clear-groups",
      "--inh-caps=-all",
      "--bounding-set=-all",
      "--no-new-privs",
      "--",
      "sh",
      "-c",
      "npm start",
    ]);
    assert.deepEqual(after_(args, "--cap-add", 1), [["CAP_SETUID"], ["CAP_SETGID"]]);
  });

  it("not root: bubblewrap's user namespace and the network shared, the command right after --", () => {
    const args = bwrapArgs(SYSTEM, BASE, ["sh", "-c", "true"]);
    assert.ok(args.includes("--unshare-all") && args.includes("--share-net"));
    assert.ok(!args.includes("setpriv") && !args.includes("--cap-add"));
    assert.deepEqual(args.slice(args.indexOf("--")), ["--", "sh", "-c", "true"]);
  });

  it("shows the revision at /app (read-only while running, read-write while building), HOME, /proc, /tmp, and nothing else", () => {
    const running = bwrapArgs(SYSTEM, BASE, ["true"]);
    assert.deepEqual(after_(running, "--ro-bind", 2).at(-1), [BASE.appDir, "/app"]);
    assert.deepEqual(after_(running, "--bind", 2), [[BASE.homeDir, "/home/app"]]);
    const building = bwrapArgs(SYSTEM, { ...BASE, writable: true }, ["true"]);
    assert.deepEqual(after_(building, "--bind", 2), [
      [BASE.appDir, "/app"],
      [BASE.homeDir, "/home/app"],
    ]);
    const sources = [...after_(running, "--ro-bind", 2), ...after_(running, "--bind", 2)].map(([src]) => src);
    assert.deepEqual(
      sources.sort(),
      [...SYSTEM.readOnly, BASE.appDir, BASE.group, BASE.homeDir, BASE.passwd].sort(),
    );
    assert.ok(!sources.includes("/") && !sources.includes("/data"));
    assert.deepEqual(after_(running, "--proc", 1), [["/proc"]]);
    assert.deepEqual(after_(running, "--tmpfs", 1), [["/tmp"]]);
    assert.deepEqual(after_(running, "--symlink", 2), [["usr/bin", "/bin"]]);
    assert.deepEqual(after_(running, "--chdir", 1), [["/app"]]);
    // Parents are created readable (bwrap would make them root-only), before anything inside them.
    const dirs = after_(running, "--dir", 1).map(([d]) => d);
    assert.deepEqual(dirs, ["/etc", "/etc/ssl", "/opt", "/home"]);
    assert.ok(running.indexOf("/etc/ssl") < running.indexOf("/etc/ssl/certs"));
  });

  it("identity files name only root, the app's user and nobody", () => {
    const f = identityFiles(200_001, 200_002);
    assert.deepEqual(
      f.passwd
        .trim()
        .split("\n")
        .map((l) => l.split(":").slice(0, 4).join(":")),
      ["root:x:0:0", "app:x:200001:200002", "nobody:x:65534:65534"],
    );
    assert.match(f.group, /^app:x:200002:$/m);
  });
});

describe("choosing the sandbox", () => {
  it("auto without a working bubblewrap runs unsandboxed and says why; bwrap refuses to start; none never probes", async () => {
    const auto = await chooseSandbox("auto", undefined, "/nonexistent/bwrap");
    assert.equal(auto.system, undefined);
    assert.match(auto.reason ?? "", /bubblewrap is not usable here/);
    await assert.rejects(
      chooseSandbox("bwrap", undefined, "/nonexistent/bwrap"),
      /SLIPWAY_SANDBOX=bwrap, but bubblewrap does not work here .*apt-get install bubblewrap/,
    );
    assert.deepEqual(await chooseSandbox("none", undefined, "/nonexistent/bwrap"), {
      system: undefined,
      reason: "SLIPWAY_SANDBOX=none",
    });
  });
});

describe("deployment uids (UidAllocator)", () => {
  after(cleanupTemp);

  it("gives each deployment its own uid in the range, the same one on every call and after a restart", async () => {
    const layout = new Layout(tempDir());
    const range = { first: 400_000, last: 400_009 };
    const a = new UidAllocator(layout, range);
    const ids = ["dep-a", "dep-b", "dep-c"];
    const uids = await Promise.all(ids.map((id) => a.uidFor(id)));
    assert.equal(new Set(uids).size, 3);
    for (const u of uids) assert.ok(u >= range.first && u <= range.last);
    assert.equal(await a.uidFor("dep-a"), uids[0]);
    const restarted = new UidAllocator(layout, range);
    assert.deepEqual(await Promise.all(ids.map((id) => restarted.uidFor(id))), uids);
    assert.equal(readFileSync(join(layout.uidClaimsDir, String(uids[0])), "utf8"), "dep-a");
  });

  it("a full range is an error naming SLIPWAY_APP_UID_RANGE; a released uid is handed out again", async () => {
    const layout = new Layout(tempDir());
    const alloc = new UidAllocator(layout, { first: 400_000, last: 400_001 });
    const first = await alloc.uidFor("dep-1");
    await alloc.uidFor("dep-2");
    await assert.rejects(
      alloc.uidFor("dep-3"),
      /every uid of SLIPWAY_APP_UID_RANGE \(400000-400001\) is in use/,
    );
    await alloc.release("dep-1");
    assert.equal(existsSync(join(layout.uidClaimsDir, String(first))), false);
    assert.equal(await alloc.uidFor("dep-3"), first);
  });

  it("a recorded uid outside a changed range is replaced by one inside it", async () => {
    const layout = new Layout(tempDir());
    const old = await new UidAllocator(layout, { first: 500_000, last: 500_000 }).uidFor("dep-x");
    assert.equal(old, 500_000);
    const now = await new UidAllocator(layout, { first: 600_000, last: 600_004 }).uidFor("dep-x");
    assert.ok(now >= 600_000 && now <= 600_004);
    assert.equal(existsSync(join(layout.uidClaimsDir, "500000")), false);
  });

  it("a uid claimed by another process (same data dir) is never handed out twice", async () => {
    const layout = new Layout(tempDir());
    const range = { first: 400_000, last: 400_000 };
    const one = new UidAllocator(layout, range);
    await one.uidFor("dep-1");
    const two = new UidAllocator(layout, range);
    await assert.rejects(two.uidFor("dep-2"), /is in use/);
  });
});
