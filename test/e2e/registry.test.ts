// The registry path end to end: a real `slipway serve` with SLIPWAY_REGISTRY_URL pointing at Debian's
// docker-registry on loopback, a real `slipway listener`, and the stand-in Kubernetes API. The
// registry takes only tokens from Slipway (`auth: token`, realm /v2/registry/token). An uploaded
// source (no image) on a listener is built with podman on a busybox base, pushed with a token for its
// own repository, and named in the listener's desired state with pull credentials; the test plays
// the kubelet. A client's push token pushes its own repository and no other.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { execEngine } from "../../src/runtimes/engine/engine.ts";
import { TestImages, testEngine } from "../helpers/container-images.ts";
import { DB_KINDS } from "../helpers/databases.ts";
import { eventually as within } from "../helpers/eventually.ts";
import {
  createApp,
  type K8sStack,
  type Labelled,
  NS,
  type Obj,
  resource,
  startK8sStack,
} from "../helpers/k8s-stack.ts";
import { startRegistry, type TestRegistry } from "../helpers/registry.ts";
import { makeTokenKeys, type TokenKeys, tokenEnv } from "../helpers/registry-token-keys.ts";
import { makeTarball } from "../helpers/tarballs.ts";
import { freePort } from "./stack.ts";

/** Image builds and pushes take longer than the other waits. */
const eventually = <T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 300_000) =>
  within(what, probe, ms);

const engine = await testEngine();

for (const kind of DB_KINDS) {
  describe(`listener images built and pushed to a registry, end to end [${kind}]`, {
    skip: engine === undefined,
  }, () => {
    let registry: TestRegistry;
    let images: TestImages;
    let keys: TokenKeys;
    let stack: K8sStack;
    const api = <T = Obj>(method: string, path: string, body?: unknown) => stack.api<T>(method, path, body);

    before(async () => {
      assert.ok(engine);
      images = new TestImages(engine);
      base = await images.baseImage();
      keys = makeTokenKeys();
      // The registry's realm names Slipway's port, so Slipway's port is chosen first.
      const port = await freePort();
      registry = await startRegistry({
        authYaml: [
          "auth:",
          "  token:",
          `    realm: http://127.0.0.1:${port}/v2/registry/token`,
          "    service: slipway-registry",
          "    issuer: slipway",
          `    rootcertbundle: ${keys.certFile}`,
        ].join("\n"),
      });
      stack = await startK8sStack(kind, {
        port,
        env: {
          ...tokenEnv(keys, `http://${registry.address}`),
          SLIPWAY_REGISTRY_INSECURE: "true",
          SLIPWAY_BUILD_BASE_IMAGE: base,
        },
      });
    });
    after(async () => {
      await stack?.close();
      await registry?.stop();
      await images?.cleanup();
      if (keys) rmSync(keys.dir, { recursive: true, force: true });
    });

    /** A registry bearer from Slipway's token endpoint, as a registry client gets one. */
    const bearer = async (password: string, repository: string, actions: string) => {
      const res = await fetch(
        `${stack.url}/v2/registry/token?service=slipway-registry&scope=${encodeURIComponent(`repository:${repository}:${actions}`)}`,
        { headers: { authorization: `Basic ${Buffer.from(`slipway:${password}`).toString("base64")}` } },
      );
      assert.equal(res.status, 200, await res.clone().text());
      return `Bearer ${((await res.json()) as { token: string }).token}`;
    };

    it("a client's push token pushes its deployment's repository, no other, and not once the deployment is gone", async () => {
      assert.ok(engine);
      const make = async (name: string) => {
        const created = await api<{ id: string }>("POST", "/v2/deployments", {
          name,
          source: "internal_docker",
          source_revision_config: { image_uri: base },
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const token = await api<{
          token: string;
          username: string;
          registry_url: string;
          repository: string;
          expires_at: string;
        }>("POST", `/v2/deployments/${created.body.id}/push-token`);
        assert.equal(token.status, 201, JSON.stringify(token.body));
        assert.ok(Date.parse(token.body.expires_at) > Date.now());
        return { id: created.body.id, name, ...token.body };
      };
      const mine = await make(`pushed-${kind}`);
      const theirs = await make(`theirs-${kind}`);
      const push = async (target: string, creds: string) => {
        const tagged = await execEngine(engine, ["tag", base, target]);
        assert.ok(tagged.ok, tagged.stderr);
        const pushed = await execEngine(engine, ["push", "--tls-verify=false", "--creds", creds, target]);
        await execEngine(engine, ["rmi", target]);
        return pushed;
      };
      const creds = `${mine.username}:${mine.token}`;
      // Where the hosted service's CLI pushes: `{registry_url}/{name}:{tag}`.
      const ok = await push(`${mine.registry_url}/${mine.name}:v1`, creds);
      assert.ok(ok.ok, ok.stderr);
      const path = mine.repository.slice(registry.address.length + 1);
      assert.deepEqual(await registry.tags(path, await bearer(mine.token, path, "pull")), ["v1"]);
      const denied = await push(`${theirs.repository}:v1`, creds);
      assert.equal(denied.ok, false, "a push to another deployment's repository must be refused");
      assert.match(denied.stderr, /denied|unauthorized|authentication required/i);
      assert.equal((await api("DELETE", `/v2/deployments/${mine.id}`)).status, 204);
      await eventually("the deployment is gone", async () =>
        (await api("GET", `/v2/deployments/${mine.id}`)).status === 404 ? true : undefined,
      );
      const afterDelete = await push(`${mine.repository}:v2`, creds);
      assert.equal(afterDelete.ok, false, "a deleted deployment's token must push nothing");
    });

    /**
     * Two uploaded sources that make the same image: one built on the base image from its app
     * config (no package.json, so no install step: the busybox base has no node or npm), one by its
     * own Dockerfile (found at the root when nothing else starts it).
     */
    const sources = [
      {
        label: "source with an app config",
        name: "built",
        files: (): Record<string, string> => ({
          "slipway.json": JSON.stringify({
            start: 'exec httpd -f -p "$PORT" -h /app/www',
            healthcheck: "/index.html",
            env: { MODE: 'say "hi" $HOME' },
          }),
          "www/index.html": '{"version":"built"}',
        }),
        built: /^\$ podman build .*--file \S+\/Containerfile /,
      },
      {
        label: "source with its own Dockerfile",
        name: "dockerfile",
        files: (): Record<string, string> => ({
          "slipway.json": JSON.stringify({ healthcheck: "/index.html", env: { MODE: 'say "hi" $HOME' } }),
          Dockerfile: [
            `FROM ${base}`,
            "WORKDIR /app",
            "COPY www/ /app/www/",
            `RUN printf '{"version":"built"}' > /app/www/index.html`,
            'CMD ["/bin/sh", "-c", "exec httpd -f -p \\"$PORT\\" -h /app/www"]',
          ].join("\n"),
          "www/index.html": "replaced by the RUN step",
        }),
        built: /^\$ podman build .*--file \S+\/Dockerfile\.slipway /,
      },
    ];
    let base = "";

    for (const source of sources)
      it(`an uploaded ${source.label} on a listener: built, pushed, run by the listener → DEPLOYED`, async () => {
        const name = `${source.name}-${kind}`;
        // An uploaded source: no image to name (the upload is its source).
        const app = await createApp(stack, name, "", {
          source: "internal_source",
          source_revision_config: { framework_config_path: "slipway.json" },
        });
        const id = app.id;
        const target = await api<{ upload_url: string; source_tarball_path: string }>(
          "POST",
          `/v2/deployments/${id}/upload-url`,
        );
        assert.equal(target.status, 201, JSON.stringify(target.body));
        const archive = await makeTarball(source.files());
        // PORT=0: the server's public URL names no real port, so the path goes to the bound one.
        const u = new URL(target.body.upload_url);
        const put = await fetch(`${stack.url}${u.pathname}${u.search}`, {
          method: "PUT",
          headers: { "content-type": "application/gzip" },
          body: new Uint8Array(archive),
        });
        assert.equal(put.status, 200, await put.text());
        const patched = await api<{ latest_revision_id: string }>("PATCH", `/v2/deployments/${id}`, {
          source_revision_config: { source_tarball_path: target.body.source_tarball_path },
        });
        assert.equal(patched.status, 200, JSON.stringify(patched.body));
        const rev = patched.body.latest_revision_id;

        let failed: string | undefined;
        const found = await eventually("the API Deployment", async () => {
          const r = (await api<Obj>("GET", `/v2/deployments/${id}/revisions/${rev}`)).body;
          if (String(r.status).endsWith("FAILED")) {
            const logs = (
              await api<{ line: string }[]>(
                "GET",
                `/v2/deployments/${id}/revisions/${rev}/logs?type=build&limit=5000`,
              )
            ).body;
            failed = `revision ${r.status}: ${r.status_message}\n${logs.map((l) => l.line).join("\n")}`;
            return true;
          }
          return app.apiDeployment();
        });
        assert.equal(failed, undefined);
        const d = found as Labelled;
        const pod = (
          d.spec as unknown as {
            template: {
              spec: {
                containers: { image: string; readinessProbe?: { httpGet?: { path?: string } } }[];
                imagePullSecrets?: { name: string }[];
              };
            };
          }
        ).template.spec;
        const container = pod.containers[0];
        // The probes ask the app config's healthcheck, read when the image was built.
        assert.equal(container?.readinessProbe?.httpGet?.path, "/index.html");
        // The cluster pulls with the desired state's credentials, kept in a dockerconfigjson Secret.
        assert.deepEqual(pod.imagePullSecrets, [{ name: `${d.metadata.name}-registry` }]);
        const pullSecret = stack.k8s.store.get(
          resource("", "v1", "secrets"),
          NS,
          `${d.metadata.name}-registry`,
        ) as (Obj & { type: string; data: Record<string, string> }) | undefined;
        assert.equal(pullSecret?.type, "kubernetes.io/dockerconfigjson");
        const auths = (
          JSON.parse(Buffer.from(pullSecret?.data[".dockerconfigjson"] ?? "", "base64").toString()) as {
            auths: Record<string, { username: string; password: string }>;
          }
        ).auths;
        const pull = auths[registry.address];
        assert.ok(pull, JSON.stringify(Object.keys(auths)));
        const image = container?.image ?? "";
        const m = new RegExp(
          `^${registry.address.replace(/\./g, "\\.")}/([0-9a-f-]{36})/${name}:${rev}$`,
        ).exec(image);
        assert.ok(m, `image ${image}`);
        const repository = `${m[1]}/${name}`;
        // The registry answers no one without a token; the cluster's credentials read this repository.
        await assert.rejects(registry.tags(repository), /401/);
        assert.deepEqual(await registry.tags(repository, await bearer(pull.password, repository, "pull")), [
          rev,
        ]);

        // What was pushed is the app: pulled back and run, it holds the uploaded files and the config's env.
        assert.ok(engine);
        const pulled = await execEngine(engine, [
          "pull",
          "--tls-verify=false",
          "--creds",
          `${pull.username}:${pull.password}`,
          image,
        ]);
        assert.ok(pulled.ok, pulled.stderr);
        const run = await execEngine(engine, [
          "run",
          "--rm",
          image,
          "sh",
          "-c",
          'cat /app/www/index.html; echo; echo "$MODE|$PORT"',
        ]);
        assert.ok(run.ok, run.stderr);
        assert.equal(run.stdout.trim(), '{"version":"built"}\nsay "hi" $HOME|8080');
        await execEngine(engine, ["rmi", "--force", image]);

        const logs = (
          await api<{ line: string }[]>(
            "GET",
            `/v2/deployments/${id}/revisions/${rev}/logs?type=build&limit=5000`,
          )
        ).body.map((l) => l.line);
        assert.ok(
          logs.some((l) => source.built.test(l)),
          logs.join("\n"),
        );
        // The build logged in with a token of its own repository, through stdin: no token in the log.
        assert.ok(
          logs.some((l) => l.startsWith("$ podman login") && l.includes("--password-stdin")),
          logs.join("\n"),
        );
        assert.ok(!logs.some((l) => /eyJ[A-Za-z0-9_-]{20,}/.test(l)), "a token in the build log");
        assert.ok(
          logs.some((l) => l === `Slipway: pushed ${image}.`),
          logs.join("\n"),
        );

        await app.completeRollout();
        await eventually(
          "DEPLOYED",
          async () =>
            (await api<Obj>("GET", `/v2/deployments/${id}/revisions/${rev}`)).body.status === "DEPLOYED",
        );
      });
  });
}
