import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { buildWithin } from "../../../src/reconciler/build-limit.ts";
import { workspaceStorage } from "../../../src/runtimes/build/build-stores.ts";
import { type Engine, execEngine } from "../../../src/runtimes/engine/engine.ts";
import { BuildError, type RevisionSpec } from "../../../src/runtimes/interface.ts";
import { CONTAINER_PORT } from "../../../src/runtimes/local/containers/container.ts";
import type { LocalRuntime } from "../../../src/runtimes/local/runtime.ts";
import { startContainerHost } from "../../helpers/container-host-process.ts";
import { TestImages, testEngine } from "../../helpers/container-images.ts";
import { dockerfileApp, resetWorkspaceStores, seedWorkspaceStore } from "../../helpers/dockerfile-apps.ts";
import { cleanupTemp, hit, newRuntime, phase, spec, tempDir, writeApp } from "../../helpers/local-runtime.ts";

/** A source's own Dockerfile built by real podman in its workspace's store, run as a container revision. */

const engine: Engine | undefined = await testEngine();

function must(r: { ok: boolean; stderr: string }, what: string): void {
  if (!r.ok) throw new Error(`${what} failed: ${r.stderr}`);
}

describe("local runtime: a source's own Dockerfile", () => {
  const images = engine === undefined ? undefined : new TestImages(engine);
  const runtimes: LocalRuntime[] = [];
  const dataDir = tempDir();
  const built: string[] = [];
  let base = "";
  const skip = images === undefined ? "no container engine or busybox here (CI requires them)" : false;

  const seed = (workspace: string) => {
    assert.ok(engine);
    return seedWorkspaceStore(engine, dataDir, workspace, base);
  };

  async function build(rt: LocalRuntime, s: RevisionSpec) {
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    built.push(`localhost/slipway-build/${s.deploymentId}:${s.revisionId}`.toLowerCase());
    return ctx;
  }

  before(async () => {
    if (images === undefined) return;
    base = await images.baseImage();
    await seed("ws-a");
    await seed("ws-b");
  });
  after(async () => {
    await Promise.all(runtimes.map((r) => r.close()));
    if (engine !== undefined && built.length > 0) await execEngine(engine, ["rmi", "--force", ...built]);
    // The stores keep their overlay mount after podman exits: reset unmounts and empties them.
    if (engine !== undefined) await resetWorkspaceStores(engine, dataDir, ["ws-a", "ws-b"]);
    await images?.cleanup(runtimes.map((r) => r.containers.owner));
    cleanupTemp();
  });

  it("builds with the app config's build args, runs with PORT and secrets at run time, and a failing RUN keeps the serving revision", {
    skip,
  }, async () => {
    const rt = newRuntime(dataDir, { healthTimeoutMs: 90_000 });
    runtimes.push(rt);
    const config = {
      build_args: { GREETING: "from-build-args" },
      dockerfile_lines: ['LABEL org.opencontainers.image.version="9.9.9"'],
      healthcheck_timeout_s: 45,
    };
    const secret = `s3cret-${Date.now()}`;
    const s1 = spec(
      { kind: "directory", path: dockerfileApp(base, { config }) },
      { workspaceId: "ws-a", env: { SECRET: secret } },
    );
    const ctx = await build(rt, s1);
    const log = ctx.text("build");
    assert.ok(
      ctx.lines.build.includes(
        "slipway: detected Dockerfile (Dockerfile): podman build; start: the image's CMD",
      ),
      log,
    );
    assert.match(log, /STEP 3\/6: RUN echo "built with \$GREETING"/);
    // The data dir is shown as <data dir> in the log.
    assert.match(
      log,
      /\$ podman --root <data dir>\/builds\/storage\/ws-a --runroot \/run\/slipway\/rr\/[0-9a-f]{16} build /,
    );
    assert.doesNotMatch(log, new RegExp(secret), "secrets never reach the build");
    const record = JSON.parse(
      readFileSync(join(dataDir, "apps", s1.deploymentId, s1.revisionId, "build.json"), "utf8"),
    );
    assert.equal(record.kind, "image");
    assert.equal(record.imageVersion, "9.9.9", "dockerfile_lines were appended");
    assert.equal(record.healthTimeoutS, 45, "the app config's health timeout is kept for activation");
    assert.equal(await rt.isBuilt(s1), true);
    assert.ok(engine);
    const inspect = await execEngine(engine, ["image", "inspect", record.image]);
    must(inspect, "podman image inspect");
    assert.doesNotMatch(inspect.stdout, new RegExp(secret), "no secret in the image");

    await rt.activate(s1, phase());
    assert.equal((await hit(rt, s1.deploymentName)).body, "built with from-build-args\n");
    const env = (await hit(rt, s1.deploymentName, "/cgi-bin/env")).body;
    assert.match(env, new RegExp(`^PORT=${CONTAINER_PORT}$`, "m"));
    assert.match(env, new RegExp(`^SECRET=${secret}$`, "m"), "secrets reach the container at run time");

    // A next revision whose RUN fails: the build names the step, the first revision keeps serving.
    const s2 = {
      ...s1,
      revisionId: `${s1.revisionId}-b`,
      source: {
        kind: "directory" as const,
        path: dockerfileApp(base, { config, run: "echo about to fail; exit 3" }),
      },
    };
    const failed = phase();
    await rt.prepare(s2, failed);
    await assert.rejects(rt.build(s2, failed), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.equal(
        err.message,
        "the Dockerfile failed at STEP 4/7: RUN echo about to fail; exit 3 (exit code 3)",
      );
      return true;
    });
    assert.ok(failed.lines.build.includes("about to fail"), failed.text("build"));
    assert.equal(await rt.isBuilt(s2), false);
    assert.equal((await hit(rt, s1.deploymentName)).body, "built with from-build-args\n");

    // A working next revision replaces it, with no failed request while it switches.
    const s3 = {
      ...s1,
      revisionId: `${s1.revisionId}-c`,
      source: {
        kind: "directory" as const,
        path: dockerfileApp(base, { config: { build_args: { GREETING: "v3" } } }),
      },
    };
    await build(rt, s3);
    let switching = true;
    const statuses: number[] = [];
    const loop = (async () => {
      while (switching) statuses.push((await hit(rt, s1.deploymentName)).status);
    })();
    await rt.activate(s3, phase());
    switching = false;
    await loop;
    assert.ok(statuses.length > 0);
    assert.deepEqual([...new Set(statuses)], [200], "every request answered while switching");
    assert.equal((await hit(rt, s1.deploymentName)).body, "built with v3\n");
  });

  it("a restarted server replaces the containers its killed predecessor left", { skip }, async (t) => {
    assert.ok(engine && images);
    const s = spec({ kind: "directory", path: dockerfileApp(base) }, { workspaceId: "ws-a" });
    built.push(`localhost/slipway-build/${s.deploymentId}:${s.revisionId}`.toLowerCase());
    const host = await startContainerHost(t, dataDir, s);
    const exited = new Promise((resolve) => host.once("exit", resolve));
    host.kill("SIGKILL");
    await exited;
    const rt = newRuntime(dataDir, { healthTimeoutMs: 90_000 });
    runtimes.push(rt);
    const [left] = await images.containers(rt.containers.owner, s.deploymentId);
    assert.ok(left, "the killed server's container is still there");
    await rt.activate(s, phase());
    const now = await images.containers(rt.containers.owner, s.deploymentId);
    assert.equal(now.length, 1, now.join(", "));
    assert.notEqual(now[0], left, "the leftover is gone; one new container serves");
    assert.equal((await hit(rt, s.deploymentName)).body, "built with none\n");
  });

  it("stops a build past the time limit and one past the disk limit", { skip }, async () => {
    assert.ok(engine);
    const rt = newRuntime(dataDir, { healthTimeoutMs: 90_000, limits: { buildDiskBytes: 20 * 1024 * 1024 } });
    runtimes.push(rt);
    const slow = spec(
      { kind: "directory", path: dockerfileApp(base, { run: "sleep 120" }) },
      { workspaceId: "ws-a" },
    );
    const ctx = phase();
    await rt.prepare(slow, ctx);
    const started = Date.now();
    await assert.rejects(buildWithin(rt, slow, ctx, 4000), /the build took longer than 4 s/);
    assert.ok(Date.now() - started < 30_000, "podman and its RUN step were stopped");
    // The RUN step's process is ended with podman (runc reaps it in a moment; longer on a loaded
    // machine): still there after 15 s means it was left to run its 120 s.
    const sleeping = () =>
      readdirSync("/proc")
        .filter((p) => /^\d+$/.test(p))
        .some((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, "utf8").replaceAll("\0", " ").includes("sleep 120");
          } catch {
            return false;
          }
        });
    let running = sleeping();
    for (let i = 0; running && i < 60; i++) {
      await new Promise((r) => setTimeout(r, 250));
      running = sleeping();
    }
    assert.equal(running, false, "no RUN step left running");

    const big = spec(
      {
        kind: "directory",
        path: dockerfileApp(base, { run: "/bin/busybox dd if=/dev/zero of=/big bs=1048576 count=40" }),
      },
      { workspaceId: "ws-a" },
    );
    const bigCtx = phase();
    await rt.prepare(big, bigCtx);
    await assert.rejects(rt.build(big, bigCtx), /the build directory grew past 20 MB/);
    assert.equal(await rt.isBuilt(big), false);
  });

  it("keeps each workspace's layers in its own store", { skip }, async () => {
    assert.ok(engine);
    const rt = newRuntime(dataDir, { healthTimeoutMs: 90_000 });
    runtimes.push(rt);
    const a = spec({ kind: "directory", path: dockerfileApp(base) }, { workspaceId: "ws-a" });
    await build(rt, a);
    const ref = `localhost/slipway-build/${a.deploymentId}:${a.revisionId}`.toLowerCase();
    const inStore = async (workspace: string) => {
      const s = workspaceStorage(dataDir, workspace);
      const r = await execEngine(engine, [
        "--root",
        s.root,
        "--runroot",
        s.runroot,
        "images",
        "--format",
        "{{.Repository}}:{{.Tag}}",
      ]);
      must(r, "podman images");
      return r.stdout.split("\n").includes(ref);
    };
    assert.equal(await inStore("ws-a"), true);
    assert.equal(await inStore("ws-b"), false, "another workspace's store never holds it");
    // Built FROM the first workspace's image, in the second: podman cannot find it there.
    const src = writeApp(tempDir(), { config: {}, extra: { Dockerfile: `FROM ${ref}\nCMD ["/bin/sh"]\n` } });
    const b = spec({ kind: "directory", path: src }, { workspaceId: "ws-b" });
    const ctx = phase();
    await rt.prepare(b, ctx);
    await assert.rejects(rt.build(b, ctx), BuildError);
    assert.match(ctx.text("build"), /--root <data dir>\/builds\/storage\/ws-b /);
    assert.equal(existsSync(join(dataDir, "builds", "storage", "ws-b")), true);
  });
});
