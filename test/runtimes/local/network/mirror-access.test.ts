import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { BuildError } from "../../../../src/runtimes/interface.ts";
import { mirrorEndpoints } from "../../../../src/runtimes/local/network/allowed.ts";
import { LoopbackForward } from "../../../../src/runtimes/local/network/loopback-forward.ts";
import {
  type DeploymentNetwork,
  NetworkNamespaces,
} from "../../../../src/runtimes/local/network/namespace.ts";
import { probeNetworkNamespaces } from "../../../../src/runtimes/local/network/probe.ts";
import { bwrapSkip } from "../../../helpers/bwrap.ts";
import { cleanupTemp, newRuntime, phase, spec, tempDir, writeApp } from "../../../helpers/local-runtime.ts";
import { makeWheel, type PythonIndex, startPythonIndex } from "../../../helpers/python-index.ts";

// Real namespaces of this test's own names (removed in `after`), HTTP servers on the host's
// loopback and on one of its own addresses: only configured mirrors are reachable from inside.
const probe = await probeNetworkNamespaces();
const RANGE = { first: 328_800, last: 328_899 };
const bwrap = await bwrapSkip(RANGE);
const skip = probe.ok ? bwrap : `network namespaces are off here: ${probe.detail}`;
const tag = randomBytes(3).toString("hex");

/** A host IPv4 address that is not loopback nor a namespace's veth (192.0.2.2 on eth0 here). */
const hostAddress = Object.values(networkInterfaces())
  .flat()
  .find(
    (a) => a !== undefined && a.family === "IPv4" && !a.internal && !a.address.startsWith("198.1"),
  )?.address;

function serve(host: string, body: string): Promise<{ server: Server; port: number; url: string }> {
  return new Promise((resolve) => {
    const server = createServer((_req, res) => res.end(body));
    server.listen(0, host, () => {
      const a = server.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      resolve({ server, port, url: `http://${host}:${port}/` });
    });
  });
}

/** From inside `net`: the body of GET url, or the error's code (2 s at most). */
function fetchFrom(net: DeploymentNetwork, url: string): Promise<string> {
  const js = `fetch(${JSON.stringify(url)},{signal:AbortSignal.timeout(2000)}).then(r=>r.text()).then(t=>console.log(t),e=>console.log("failed: "+(e.cause?.code??e.name)))`;
  return new Promise((resolve, reject) =>
    execFile("nsenter", [`--net=${net.path}`, "--", process.execPath, "-e", js], (err, out) =>
      err ? reject(err) : resolve(String(out).trim()),
    ),
  );
}

describe("package mirrors reachable from a deployment's namespace at their own URLs", { skip }, () => {
  let slots: string;
  let namespaces: NetworkNamespaces;
  let net: DeploymentNetwork;
  const servers: Server[] = [];
  let loopIndex: { port: number; url: string };
  let loopOther: { port: number; url: string };
  let hostIndex: { url: string } | undefined;
  let hostOther: { url: string } | undefined;
  let pypi: PythonIndex;
  let wheels: string;

  before(async () => {
    slots = await mkdtemp(join(tmpdir(), "slipway-mirror-slots-"));
    const up = async (host: string, body: string) => {
      const s = await serve(host, body);
      servers.push(s.server);
      return s;
    };
    loopIndex = await up("127.0.0.1", "index on loopback");
    loopOther = await up("127.0.0.1", "another loopback service");
    if (hostAddress !== undefined) {
      hostIndex = await up(hostAddress, "index on a host address");
      hostOther = await up(hostAddress, "another host service");
    }
    wheels = await mkdtemp(join(tmpdir(), "slipway-mirror-wheels-"));
    makeWheel(wheels, "greetlib", "1.0", { "greetlib/__init__.py": 'GREETING = "hello from greetlib"\n' });
    pypi = await startPythonIndex([wheels]);
    const mirrors = [loopIndex.url, pypi.url, ...(hostIndex ? [hostIndex.url] : [])];
    namespaces = new NetworkNamespaces({
      // "none": only what is allowed gets out, so the mirrors pass because they are mirrors.
      egress: "none",
      allow: [...(hostAddress ? [hostAddress] : [])],
      mirrors,
      table: `slipway_test_${tag}`,
      prefix: "tm",
      namePrefix: `slipway-test-${tag}-`,
      slotsDir: slots,
    });
    net = await namespaces.ensure(`mirrors-${tag}`);
  });
  after(async () => {
    for (const s of servers) s.close();
    await pypi?.close();
    await namespaces?.closeAll();
    await rm(slots, { recursive: true, force: true });
    if (wheels) await rm(wheels, { recursive: true, force: true });
    cleanupTemp();
  });

  it("an index on the host's loopback, and not another loopback port", async () => {
    assert.equal(await fetchFrom(net, loopIndex.url), "index on loopback");
    assert.equal(await fetchFrom(net, loopOther.url), "failed: ECONNREFUSED");
    assert.equal(await fetchFrom(net, "http://127.0.0.1:5432/"), "failed: ECONNREFUSED");
  });

  it("a client that ends its side after its request still gets the answer (HTTP/1.0 tools, nc)", async () => {
    const u = new URL(loopIndex.url);
    const js = `const s=require("net").connect(${u.port},"127.0.0.1",()=>s.end("GET / HTTP/1.0\\r\\n\\r\\n"));let t="";s.on("data",d=>t+=d);s.on("close",()=>console.log(t.split("\\r\\n\\r\\n")[1]??"(nothing)"));setTimeout(()=>s.destroy(),3000)`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile("nsenter", [`--net=${net.path}`, "--", process.execPath, "-e", js], (err, o) =>
        err ? reject(err) : resolve(String(o).trim()),
      ),
    );
    assert.equal(out, "index on loopback");
  });

  it("an index on one of the host's own addresses, and not another port there", {
    skip: hostAddress === undefined ? "no IPv4 address on this host but loopback" : false,
  }, async () => {
    assert.ok(hostIndex && hostOther);
    assert.equal(await fetchFrom(net, hostIndex.url), "index on a host address");
    // The host table drops the rest (a timeout, not a refusal).
    assert.match(await fetchFrom(net, hostOther.url), /^failed: /);
  });

  it("opens nothing once the deployment is removed", async () => {
    const id = `gone-${tag}`;
    const gone = await namespaces.ensure(id);
    assert.equal(await fetchFrom(gone, loopIndex.url), "index on loopback");
    await namespaces.remove(id);
    const elements = await new Promise<string>((resolve) =>
      execFile("nft", ["list", "set", "inet", `slipway_test_${tag}`, "gates"], (_e, out) =>
        resolve(String(out)),
      ),
    );
    assert.doesNotMatch(elements, new RegExp(gone.hostIf));
    // Made again, it is forwarded again (the old listener went with the old namespace).
    const again = await namespaces.ensure(id);
    assert.equal(await fetchFrom(again, loopIndex.url), "index on loopback");
  });

  it("a loopback port taken inside the namespace is an error naming the index", async () => {
    const taken = LoopbackForward.open(net.path, "127.0.0.1", loopIndex.port);
    await assert.rejects(
      taken,
      /the package index at 127\.0\.0\.1:\d+ cannot be reached from the namespace: .*EADDRINUSE/,
    );
  });

  it("a sandboxed build downloads from the loopback index; another loopback port is refused", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir, {
      sandbox: "bwrap",
      uidRange: RANGE,
      packageIndexes: { npm: loopIndex.url, pipExtra: [] },
      egress: { egress: "none", egressAllow: [], mirrors: [loopIndex.url], namespaces },
    });
    const download = (url: string) =>
      `node -e "fetch('${url}').then(r=>r.text()).then(t=>require('fs').writeFileSync('got.txt',t))"`;
    const ok = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { installCommand: download(loopIndex.url) },
    );
    const ctx = phase();
    await rt.prepare(ok, ctx);
    await rt.build(ok, ctx);
    const app = join(dataDir, "apps", ok.deploymentId, ok.revisionId, "app", "got.txt");
    assert.ok(existsSync(app), ctx.text("build"));
    assert.equal(readFileSync(app, "utf8"), "index on loopback");

    const refused = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { installCommand: download(loopOther.url) },
    );
    const ctx2 = phase();
    await rt.prepare(refused, ctx2);
    await assert.rejects(rt.build(refused, ctx2), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.match(err.message, /ECONNREFUSED/, err.message);
      return true;
    });
    await rt.close();
  });

  it("a sandboxed pip install fetches from the loopback index; a missing requirement is named", async () => {
    const rt = newRuntime(tempDir(), {
      sandbox: "bwrap",
      uidRange: RANGE,
      packageIndexes: { pip: pypi.url, pipExtra: [] },
      egress: { egress: "none", egressAllow: [], mirrors: [pypi.url], namespaces },
    });
    try {
      const app = (requirements: string) =>
        spec(
          {
            kind: "directory",
            path: writeApp(tempDir(), {
              config: undefined,
              extra: { "app.py": "import greetlib\n", "requirements.txt": requirements },
            }),
          },
          { frameworkConfigPath: undefined },
        );
      const ok = app("greetlib==1.0\n");
      const ctx = phase();
      await rt.prepare(ok, ctx);
      await rt.build(ok, ctx);
      assert.match(ctx.text("build"), /Successfully installed greetlib-1\.0/);
      assert.ok(pypi.asked.includes("greetlib"));

      const missing = app("greetlib==1.0\nno-such-package==2.0\n");
      const ctx2 = phase();
      await rt.prepare(missing, ctx2);
      await assert.rejects(rt.build(missing, ctx2), (err: unknown) => {
        assert.ok(err instanceof BuildError);
        assert.match(
          err.message,
          /^install command "pip install -r requirements\.txt" exited with code 1: .*ERROR: No matching distribution found for no-such-package==2\.0/,
        );
        return true;
      });
    } finally {
      await rt.close();
    }
  });

  it("lists each mirror's address and port, loopback ones marked", async () => {
    const names: Record<string, string[]> = {
      "mirror.internal": ["10.9.8.7"],
      localhost: ["127.0.0.1", "::1"],
    };
    const got = await mirrorEndpoints(
      [
        "http://mirror.internal:4873/",
        "https://192.168.5.5/simple/",
        "http://localhost:9000/",
        "http://[::1]/",
      ],
      async (h) => names[h] ?? [],
    );
    assert.deepEqual(got, [
      { address: "10.9.8.7", port: 4873, loopback: false },
      { address: "192.168.5.5", port: 443, loopback: false },
      { address: "127.0.0.1", port: 9000, loopback: true },
      { address: "::1", port: 9000, loopback: true },
      { address: "::1", port: 80, loopback: true },
    ]);
  });
});
