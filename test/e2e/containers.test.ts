import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { insertApiKey } from "../../src/resources/api-keys/service.ts";
import { execEngine } from "../../src/runtimes/engine/engine.ts";
import { CONTAINER_PORT, OWNER_LABEL } from "../../src/runtimes/local/containers/container.ts";
import { deploymentNetwork } from "../../src/runtimes/local/containers/container-isolation.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { TestImages, testEngine } from "../helpers/container-images.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { Api, appGet, type Deployment, e2eEnv, freePort, gitRoot, loopRequests } from "./stack.ts";

/**
 * external_docker and internal_docker through the API with the reconciler and real containers:
 * deploy, switch under a client loop, a missing secret reference, containers apart, a Slipway
 * restart, delete.
 */
const engine = await testEngine();
const images = engine === undefined ? undefined : new TestImages(engine);
const skip = images === undefined ? "no container engine or busybox here (CI requires them)" : false;
const refsDir = mkdtempSync(join(tmpdir(), "slipway-refs-"));
mkdirSync(join(refsDir, "app-secrets"));
writeFileSync(join(refsDir, "app-secrets", "greeting"), "hello from a mounted secret");
const appsPort = await freePort();
const owners: string[] = [];
let v1 = "";
let v2 = "";
let wrongPort = "";
let built: Promise<void> | undefined;
/** Both database suites share the images; built once, removed after the file. */
const buildImages = () => {
  built ??= (async () => {
    if (images === undefined) return;
    v1 = await images.build("web", "1", { version: "1", label: "1.0.0" });
    v2 = await images.build("web", "2", { version: "2", label: "2.0.0" });
    wrongPort = await images.build("web", "wrong-port", {
      version: "wrong",
      cmd: 'echo "PORT is $PORT"; exec /bin/httpd -f -p 3000 -h /www',
    });
  })();
  return built;
};
after(async () => {
  await images?.cleanup(owners);
  rmSync(refsDir, { recursive: true, force: true });
});

interface ImageDeployment extends Deployment {
  image_version: string | null;
}

forEachDatabase(
  "end to end: external_docker and internal_docker containers",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    const servers: Server[] = [];
    let api: Api;
    let dep: ImageDeployment;
    let url = "";
    let internalUrl = "";
    let internalId = "";
    const settle = (rid: string) => waitForRevision(suite.ctx.db, rid, { timeoutMs: 120_000 });
    const latest = async (id: string) => {
      const d = await api.deployment(id);
      assert.ok(d.latest_revision_id);
      return d.latest_revision_id;
    };
    const listed = async (version: string) =>
      (
        await api.call<{ resources: { id: string }[] }>(
          "GET",
          `/v2/deployments?image_version=${encodeURIComponent(version)}`,
        )
      ).resources.map((d) => d.id);
    const start = async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      owners.push(stack.runtime.containers.owner);
      return stack;
    };

    before(async () => {
      await buildImages();
      api = new Api(suite.ctx);
      if (images !== undefined) await start();
    });
    after(async () => {
      await stack?.stop();
      for (const server of servers) server.close();
    });

    it("external_docker deploys with secrets, secret references and image_version from the label", {
      skip,
    }, async () => {
      dep = await api.call<ImageDeployment>(
        "POST",
        "/v2/deployments",
        {
          name: `web-${kind}`,
          source: "external_docker",
          source_revision_config: { image_uri: v1 },
          secrets: [{ name: "API_TOKEN", value: "token-value-123" }],
          secret_references: [{ name: "GREETING", secret_name: "app-secrets", secret_key: "greeting" }],
        },
        201,
      );
      assert.ok(dep.latest_revision_id);
      assert.equal(await settle(dep.latest_revision_id), "DEPLOYED");
      dep = await api.call<ImageDeployment>("GET", `/v2/deployments/${dep.id}`);
      assert.equal(dep.image_version, "1.0.0");
      assert.ok(dep.source_config.custom_url);
      url = dep.source_config.custom_url;
      assert.deepEqual((await appGet(url)).body, { version: "1" });
      assert.deepEqual((await appGet(url, "/cgi-bin/greeting")).body, {
        version: "1",
        greeting: "hello from a mounted secret",
      });
      assert.deepEqual(await listed("1.0.0"), [dep.id]);
      assert.deepEqual(await listed("2.0.0"), []);
    });

    it("a new image_uri switches with zero failed requests under a client loop", { skip }, async () => {
      let done = false;
      const loop = loopRequests(url, () => done);
      await api.patch(dep.id, { source_revision_config: { image_uri: v2 } });
      const rid = await latest(dep.id);
      assert.equal(await settle(rid), "DEPLOYED");
      await new Promise((r) => setTimeout(r, 300));
      done = true;
      const { versions, failures } = await loop;
      assert.deepEqual(failures, []);
      assert.deepEqual(versions, ["1", "2"]);
      assert.equal(
        (await api.call<ImageDeployment>("GET", `/v2/deployments/${dep.id}`)).image_version,
        "2.0.0",
      );
      assert.deepEqual(await listed("2.0.0"), [dep.id]);
      assert.deepEqual(await listed("1.0.0"), []);
    });

    it("a missing secret reference fails the deploy naming it; a path-like key is refused", {
      skip,
    }, async () => {
      await api.patch(dep.id, {
        secret_references: [{ name: "MISSING", secret_name: "nope", secret_key: "token" }],
      });
      const rid = await latest(dep.id);
      assert.equal(await settle(rid), "DEPLOY_FAILED");
      const lines = await api.logs(dep.id, rid, "deploy");
      assert.ok(
        lines.some((l) =>
          l.includes(
            'secret reference MISSING (secret "nope", key "token") was not found: SLIPWAY_SECRET_REFS_DIR has no nope/token',
          ),
        ),
        lines.join("\n"),
      );
      assert.equal((await appGet(url)).body.version, "2", "the active revision kept serving");
      const refused = await suite.ctx.app.inject({
        method: "PATCH",
        url: `/v2/deployments/${dep.id}`,
        headers: suite.ctx.headers(suite.ctx.keys.admin, { "content-type": "application/json" }),
        payload: JSON.stringify({
          secret_references: [{ name: "X", secret_name: "app-secrets", secret_key: ".." }],
        }),
      });
      assert.equal(refused.statusCode, 422);
      assert.deepEqual(
        refused.json<{ detail: { loc: string[] }[] }>().detail.map((d) => d.loc.join(".")),
        ["body.secret_references.0.secret_key"],
      );
    });

    it("an image that listens on a hard-coded port fails naming it and $PORT; the active revision keeps serving", {
      skip,
    }, async () => {
      await api.patch(dep.id, {
        source_revision_config: { image_uri: wrongPort },
        secret_references: [{ name: "GREETING", secret_name: "app-secrets", secret_key: "greeting" }],
      });
      const rid = await latest(dep.id);
      assert.equal(await settle(rid), "DEPLOY_FAILED");
      const rev = await api.call<{ status_message: string | null }>(
        "GET",
        `/v2/deployments/${dep.id}/revisions/${rid}`,
      );
      assert.match(
        rev.status_message ?? "",
        new RegExp(
          `^process web\\.1 listens on port 3000, not on \\$PORT \\(${CONTAINER_PORT}\\): make it listen on the port in the PORT environment variable$`,
        ),
      );
      assert.ok((await api.logs(dep.id, rid, "deploy")).includes(`PORT is ${CONTAINER_PORT}`));
      assert.equal((await appGet(url)).body.version, "2", "the active revision kept serving");
    });

    it("internal_docker runs an image already in the store, and switches under a client loop", {
      skip,
    }, async () => {
      const internal = await api.call<ImageDeployment>(
        "POST",
        "/v2/deployments",
        { name: `pushed-${kind}`, source: "internal_docker", source_revision_config: { image_uri: v1 } },
        201,
      );
      assert.ok(internal.latest_revision_id);
      assert.equal(await settle(internal.latest_revision_id), "DEPLOYED");
      let d = await api.call<ImageDeployment>("GET", `/v2/deployments/${internal.id}`);
      assert.equal(d.image_version, "1.0.0");
      assert.ok(d.source_config.custom_url);
      internalUrl = d.source_config.custom_url;
      internalId = internal.id;
      assert.deepEqual((await appGet(internalUrl)).body, { version: "1" });

      let done = false;
      const loop = loopRequests(internalUrl, () => done);
      await api.patch(internal.id, { source_revision_config: { image_uri: v2 } });
      assert.equal(await settle(await latest(internal.id)), "DEPLOYED");
      await new Promise((r) => setTimeout(r, 300));
      done = true;
      const { versions, failures } = await loop;
      assert.deepEqual(failures, []);
      assert.deepEqual(versions, ["1", "2"]);
      d = await api.call<ImageDeployment>("GET", `/v2/deployments/${internal.id}`);
      assert.equal(d.image_version, "2.0.0");
    });

    it("the two deployments' containers run apart: own networks, no host root, each out of the other's reach", {
      skip,
    }, async () => {
      assert.ok(images && stack && engine);
      const owner = stack.runtime.containers.owner;
      const [web] = await images.containers(owner, dep.id);
      const [pushed] = await images.containers(owner, internalId);
      assert.ok(web && pushed);
      const inspect = async (name: string, format: string) =>
        (await execEngine(engine, ["inspect", "--format", format, "--", name])).stdout.trim();
      const networks = "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}";
      assert.equal(await inspect(web, networks), deploymentNetwork(owner, dep.id));
      assert.equal(await inspect(pushed, networks), deploymentNetwork(owner, internalId));
      const pid = Number(await inspect(web, "{{.State.Pid}}"));
      const [, hostRoot] = /^\s*0\s+(\d+)/.exec(readFileSync(`/proc/${pid}/uid_map`, "utf8")) ?? [];
      assert.ok(hostRoot !== undefined && hostRoot !== "0", "the container's root is not the host's");
      // Only the six capabilities of docs/containers.md: CHOWN DAC_OVERRIDE FOWNER SETGID SETUID NET_BIND_SERVICE.
      const capEff = /^CapEff:\s*(\w+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
      assert.equal(capEff, "00000000000004cb");
      const ip = await inspect(pushed, "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}");
      const request = 'printf "GET / HTTP/1.0\\r\\n\\r\\n" | /bin/busybox nc -w 4 "$0" 8080';
      const across = await execEngine(engine, ["exec", web, "/bin/busybox", "sh", "-c", request, ip]);
      assert.equal(across.ok, false, `the other deployment's container answered: ${across.stdout}`);
      const own = await execEngine(engine, ["exec", pushed, "/bin/busybox", "sh", "-c", request, ip]);
      assert.match(own.stdout, /"version":"2"/, "it answers inside its own network");
      assert.equal((await appGet(url)).body.version, "2", "both still served through the edge");
      assert.equal((await appGet(internalUrl)).body.version, "2");
    });

    it("a restarted Slipway runs both deployments' active images again", { skip }, async () => {
      assert.ok(images && stack);
      const owner = stack.runtime.containers.owner;
      await stack.stop();
      stack = undefined;
      assert.deepEqual(await images.containers(owner), [], "stopping Slipway stops its containers");
      const again = await start();
      await again.reconciler.ready;
      const answer = await appGet(url, "/cgi-bin/greeting");
      assert.deepEqual(answer.body, { version: "2", greeting: "hello from a mounted secret" });
      assert.deepEqual((await appGet(internalUrl)).body, { version: "2" });
    });

    it("deleting the deployments removes every container", { skip }, async () => {
      assert.ok(images && stack);
      const owner = stack.runtime.containers.owner;
      assert.equal((await images.containers(owner)).length, 2);
      const all = await api.call<{ resources: { id: string }[] }>("GET", "/v2/deployments");
      for (const d of all.resources) await api.call("DELETE", `/v2/deployments/${d.id}`);
      const deadline = Date.now() + 60_000;
      while ((await api.call<{ resources: unknown[] }>("GET", "/v2/deployments")).resources.length > 0) {
        assert.ok(Date.now() < deadline, "deployments still there");
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(await images.containers(owner), []);
      assert.notEqual((await appGet(url)).status, 200);
      assert.ok(engine);
      const left = await execEngine(engine, [
        "network",
        "ls",
        "--quiet",
        "--filter",
        `label=${OWNER_LABEL}=${owner}`,
      ]);
      assert.deepEqual([left.ok, left.stdout.trim()], [true, ""], "their networks are gone too");
    });

    it("a second organization's container reaches none of the host's services, through its gateway or its loopback; it answers through the edge", {
      skip,
    }, async () => {
      assert.ok(images && stack && engine);
      const ctx = suite.ctx;
      const memberB = (await insertApiKey(ctx.db.orm, { organizationId: ctx.other.orgId, role: "member" }))
        .key;
      const res = await ctx.app.inject({
        method: "POST",
        url: "/v2/deployments",
        headers: ctx.headers(memberB, { "content-type": "application/json" }),
        payload: JSON.stringify({
          name: `spy-${kind}`,
          source: "external_docker",
          source_revision_config: { image_uri: v1 },
        }),
      });
      assert.equal(res.statusCode, 201, res.body);
      const spy = res.json<ImageDeployment>();
      assert.ok(spy.latest_revision_id);
      assert.equal(await settle(spy.latest_revision_id), "DEPLOYED");
      const got = await ctx.app.inject({
        method: "GET",
        url: `/v2/deployments/${spy.id}`,
        headers: ctx.headers(memberB),
      });
      const spyUrl = got.json<ImageDeployment>().source_config.custom_url;
      assert.ok(spyUrl);
      const [name] = await images.containers(stack.runtime.containers.owner, spy.id);
      assert.ok(name);
      const net = deploymentNetwork(stack.runtime.containers.owner, spy.id);
      const gateway = (
        await execEngine(engine, [
          "network",
          "inspect",
          "--format",
          "{{range .Subnets}}{{.Gateway}}{{end}}",
          net,
        ])
      ).stdout.trim();
      assert.ok(gateway, "the deployment's network has a gateway");
      // Slipway's API on a real port; a host service on the gateway and one on all interfaces.
      await ctx.app.listen({ host: "127.0.0.1", port: 0 });
      const apiPort = (ctx.app.server.address() as AddressInfo).port;
      const listen = async (host: string) => {
        const server = createServer((_req, r) => r.end("host service"));
        servers.push(server);
        await new Promise<void>((resolve) => server.listen(0, host, resolve));
        return (server.address() as AddressInfo).port;
      };
      const onGateway = await listen(gateway);
      const everywhere = await listen("0.0.0.0");
      // The host reaches them: a failure from the container is the isolation's doing.
      assert.equal(await (await fetch(`http://${gateway}:${onGateway}/`)).text(), "host service");
      assert.equal(await (await fetch(`http://127.0.0.1:${everywhere}/`)).text(), "host service");
      assert.equal((await fetch(`http://127.0.0.1:${apiPort}/ok`)).status < 500, true);
      // A request to each host:port pair: "reached" when something answered.
      const probe = [
        'while [ "$#" -gt 1 ]; do',
        '  printf "GET / HTTP/1.0\\r\\n\\r\\n" | /bin/busybox nc -w 3 "$1" "$2" >/dev/null 2>&1 && echo "reached $1:$2"',
        "  shift 2",
        "done",
      ].join("\n");
      const targets = [5432, apiPort, appsPort, onGateway, everywhere].flatMap((port) => [
        "127.0.0.1",
        String(port),
        gateway,
        String(port),
      ]);
      const tried = await execEngine(engine, [
        "exec",
        name,
        "/bin/busybox",
        "sh",
        "-c",
        probe,
        "sh",
        ...targets,
      ]);
      assert.ok(tried.ok, tried.stderr);
      assert.equal(tried.stdout.trim(), "", "no host service answered");
      // The same probe reaches the container's own port: it works.
      const own = await execEngine(engine, [
        "exec",
        name,
        "/bin/busybox",
        "sh",
        "-c",
        probe,
        "sh",
        "127.0.0.1",
        "8080",
      ]);
      assert.equal(own.stdout.trim(), "reached 127.0.0.1:8080");
      // uid 0 inside is no host root; capabilities within the list.
      const pid = Number(
        (await execEngine(engine, ["inspect", "--format", "{{.State.Pid}}", "--", name])).stdout.trim(),
      );
      const [, hostRoot] = /^\s*0\s+(\d+)/.exec(readFileSync(`/proc/${pid}/uid_map`, "utf8")) ?? [];
      assert.ok(hostRoot !== undefined && hostRoot !== "0", "the container's root is not the host's");
      const capEff = /^CapEff:\s*(\w+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "";
      assert.equal(BigInt(`0x${capEff}`) & ~0x4cbn, 0n, `CapEff ${capEff} within the six`);
      assert.deepEqual((await appGet(spyUrl)).body, { version: "1" });
    });
  },
  {
    env: {
      ...e2eEnv(gitRoot().root, appsPort),
      // Containers start slower than processes, more so on a loaded machine.
      SLIPWAY_HEALTH_TIMEOUT_MS: "60000",
      SLIPWAY_SECRET_REFS_DIR: refsDir,
    },
  },
);
