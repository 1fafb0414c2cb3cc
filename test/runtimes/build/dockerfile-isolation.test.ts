import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { RUN_STEP_CAPS } from "../../../src/runtimes/build/dockerfile.ts";
import { type Engine, execEngine } from "../../../src/runtimes/engine/engine.ts";
import { NetworkNamespaces } from "../../../src/runtimes/local/network/namespace.ts";
import { probeNetworkNamespaces } from "../../../src/runtimes/local/network/probe.ts";
import { bwrapSkip } from "../../helpers/bwrap.ts";
import { TestImages, testEngine } from "../../helpers/container-images.ts";
import { dockerfileApp, resetWorkspaceStores, seedWorkspaceStore } from "../../helpers/dockerfile-apps.ts";
import { cleanupTemp, newRuntime, phase, spec, tempDir } from "../../helpers/local-runtime.ts";

/**
 * A Dockerfile's RUN steps, as a tenant writes them, run in the deployment's own network namespace
 * (real podman, real namespaces and nft tables of this test's own names): a package mirror on the
 * host's loopback answers; another host loopback port (PostgreSQL's, another app's) does not; and
 * root in the step holds only the capabilities an install needs.
 */

const engine: Engine | undefined = await testEngine();
const probe = await probeNetworkNamespaces();
const RANGE = { first: 329_300, last: 329_399 };
const bwrap = await bwrapSkip(RANGE);
const skip =
  engine === undefined
    ? "no container engine or busybox here (CI requires them)"
    : probe.ok
      ? bwrap
      : `network namespaces are off here: ${probe.detail}`;
const tag = randomBytes(3).toString("hex");

function serve(body: string): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = createServer((_req, res) => res.end(body));
    server.listen(0, "127.0.0.1", () => {
      const a = server.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}/` });
    });
  });
}

/** The capability mask of a list of names (CAP_CHOWN is bit 0 …), as /proc/self/status prints it. */
function capMask(names: string[]): string {
  const bits: Record<string, number> = {
    CHOWN: 0,
    DAC_OVERRIDE: 1,
    FOWNER: 3,
    FSETID: 4,
    KILL: 5,
    SETGID: 6,
    SETUID: 7,
    NET_BIND_SERVICE: 10,
    SETFCAP: 31,
  };
  let mask = 0n;
  for (const n of names) {
    const bit = bits[n];
    assert.notEqual(bit, undefined, `a bit for ${n}`);
    mask |= 1n << BigInt(bit ?? 0);
  }
  return mask.toString(16).padStart(16, "0");
}

describe("a Dockerfile's RUN steps in the deployment's network namespace", { skip }, () => {
  const images = engine === undefined ? undefined : new TestImages(engine);
  const dataDir = tempDir();
  const servers: Server[] = [];
  let slots = "";
  let namespaces: NetworkNamespaces | undefined;
  let base = "";
  let mirror = "";
  let other = "";

  before(async () => {
    assert.ok(engine && images);
    base = await images.baseImage();
    await seedWorkspaceStore(engine, dataDir, "ws-iso", base);
    const m = await serve("from the mirror");
    const o = await serve("another host service");
    servers.push(m.server, o.server);
    mirror = m.url;
    other = o.url;
    slots = await mkdtemp(join(tmpdir(), "slipway-dockerfile-slots-"));
    namespaces = new NetworkNamespaces({
      egress: "none",
      allow: [],
      mirrors: [mirror],
      table: `slipway_test_${tag}`,
      prefix: "td",
      namePrefix: `slipway-test-${tag}-`,
      slotsDir: slots,
    });
  });
  after(async () => {
    for (const s of servers) s.close();
    await namespaces?.closeAll();
    if (slots) await rm(slots, { recursive: true, force: true });
    if (engine !== undefined) await resetWorkspaceStores(engine, dataDir, ["ws-iso"]);
    await images?.cleanup([]);
    cleanupTemp();
  });

  it("reaches the mirror, not the host's other loopback ports, with the install capabilities only", async () => {
    assert.ok(engine && namespaces);
    const rt = newRuntime(dataDir, {
      sandbox: "bwrap",
      uidRange: RANGE,
      healthTimeoutMs: 90_000,
      packageIndexes: { npm: mirror, pipExtra: [] },
      egress: { egress: "none", egressAllow: [], mirrors: [mirror], namespaces },
    });
    try {
      // busybox's nc, not its wget: a static wget crashes looking up the http service without NSS.
      const fetchTo = (url: string, file: string) => {
        const u = new URL(url);
        const request = "(printf 'GET / HTTP/1.0\\r\\n\\r\\n'; sleep 2)";
        return `(${request} | /bin/busybox nc -w 3 ${u.hostname} ${u.port} > /www/${file} || echo unreachable > /www/${file})`;
      };
      const run = [
        fetchTo(mirror, "mirror.txt"),
        fetchTo(other, "other.txt"),
        fetchTo("http://127.0.0.1:5432/", "postgres.txt"),
        "(/bin/busybox grep CapEff /proc/self/status > /www/caps.txt)",
        'echo "$NPM_CONFIG_REGISTRY" > /www/registry.txt',
      ].join(" && ");
      const s = spec(
        { kind: "directory", path: dockerfileApp(base, { run, args: ["NPM_CONFIG_REGISTRY"] }) },
        { workspaceId: "ws-iso", trusted: false },
      );
      const ctx = phase();
      await rt.prepare(s, ctx);
      await rt.build(s, ctx);
      const log = ctx.text("build");
      assert.match(log, /--network ns:\/run\/netns\/slipway-test-/, log);
      assert.match(log, new RegExp(`--cap-drop=ALL --cap-add=${RUN_STEP_CAPS.join(",")}`));
      const ref = `localhost/slipway-build/${s.deploymentId}:${s.revisionId}`.toLowerCase();
      const read = async (file: string) => {
        const r = await execEngine(engine, [
          "run",
          "--rm",
          ...["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"],
          ...["--network", "none", ref, "cat", `/www/${file}`],
        ]);
        assert.ok(r.ok, r.stderr);
        return r.stdout.trim();
      };
      try {
        assert.match(await read("mirror.txt"), /^HTTP\/1\.1 200 OK[\s\S]*from the mirror$/);
        assert.equal(await read("other.txt"), "unreachable");
        assert.equal(await read("postgres.txt"), "unreachable");
        assert.equal(await read("caps.txt"), `CapEff:\t${capMask(RUN_STEP_CAPS)}`);
        assert.equal(await read("registry.txt"), mirror, "the mirror is a build arg");
      } finally {
        await execEngine(engine, ["rmi", "--force", ref]);
      }
    } finally {
      await rt.close();
    }
  });
});
