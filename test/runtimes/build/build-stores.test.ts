import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { builtImageRef, workspaceStorage } from "../../../src/runtimes/build/build-stores.ts";
import { type Engine, execEngine } from "../../../src/runtimes/engine/engine.ts";
import { BuildError } from "../../../src/runtimes/interface.ts";
import type { LocalRuntime } from "../../../src/runtimes/local/runtime.ts";
import { TestImages, testEngine } from "../../helpers/container-images.ts";
import { dockerfileApp, resetWorkspaceStores, seedWorkspaceStore } from "../../helpers/dockerfile-apps.ts";
import { cleanupTemp, newRuntime, phase, spec, tempDir } from "../../helpers/local-runtime.ts";

/**
 * Built images go with what they were built for (real podman): a discarded revision's image leaves
 * the engine's store, a deleted deployment's leave both stores, and a workspace's layer cache past
 * SLIPWAY_BUILD_CACHE_MB is pruned.
 */

const engine: Engine | undefined = await testEngine();
const skip = engine === undefined ? "no container engine or busybox here (CI requires them)" : false;

describe("the images Dockerfile builds leave behind", { skip }, () => {
  const images = engine === undefined ? undefined : new TestImages(engine);
  const dataDir = tempDir();
  const runtimes: LocalRuntime[] = [];
  let base = "";

  /** Tagged images in a store (the engine's default one when no workspace is named). */
  async function tagged(workspace?: string): Promise<string[]> {
    assert.ok(engine);
    const s = workspace === undefined ? undefined : workspaceStorage(dataDir, workspace);
    const flags = s === undefined ? [] : ["--root", s.root, "--runroot", s.runroot];
    const r = await execEngine(engine, [...flags, "images", "--format", "{{.Repository}}:{{.Tag}}"]);
    assert.ok(r.ok, r.stderr);
    return r.stdout.split("\n").filter((l) => l.startsWith("localhost/slipway-build/"));
  }

  before(async () => {
    assert.ok(engine && images);
    base = await images.baseImage();
    await seedWorkspaceStore(engine, dataDir, "ws-gc", base);
    await seedWorkspaceStore(engine, dataDir, "ws-cap", base);
    await seedWorkspaceStore(engine, dataDir, "ws-broken", base);
  });
  after(async () => {
    await Promise.all(runtimes.map((r) => r.close()));
    if (engine !== undefined) await resetWorkspaceStores(engine, dataDir, ["ws-gc", "ws-cap", "ws-broken"]);
    await images?.cleanup(runtimes.map((r) => r.containers.owner));
    cleanupTemp();
  });

  it("a discarded revision's image leaves the engine's store; teardown removes the rest from both", async () => {
    const rt = newRuntime(dataDir, { healthTimeoutMs: 90_000 });
    runtimes.push(rt);
    const a = spec({ kind: "directory", path: dockerfileApp(base) }, { workspaceId: "ws-gc" });
    const b = {
      ...a,
      revisionId: `${a.revisionId}-b`,
      source: { kind: "directory" as const, path: dockerfileApp(base, { run: "echo b" }) },
    };
    for (const s of [a, b]) {
      const ctx = phase();
      await rt.prepare(s, ctx);
      await rt.build(s, ctx);
    }
    const refA = builtImageRef(a.deploymentId, a.revisionId);
    const refB = builtImageRef(b.deploymentId, b.revisionId);
    assert.deepEqual((await tagged()).filter((r) => r === refA || r === refB).sort(), [refA, refB].sort());
    await rt.activate(b, phase());
    await rt.discard(a.deploymentId, a.revisionId);
    const left = await tagged();
    assert.equal(left.includes(refA), false, "the discarded revision's image is gone");
    assert.equal(left.includes(refB), true, "the serving revision's stays");
    assert.equal(await rt.isBuilt(a), false);

    await rt.teardown(a.deploymentId);
    const ours = (refs: string[]) =>
      refs.filter((r) => r.startsWith(`localhost/slipway-build/${a.deploymentId}`.toLowerCase()));
    assert.deepEqual(ours(await tagged()), []);
    assert.deepEqual(ours(await tagged("ws-gc")), []);
  });

  it("a workspace's layer cache past SLIPWAY_BUILD_CACHE_MB is pruned; the built image still runs", async () => {
    const rt = newRuntime(dataDir, {
      healthTimeoutMs: 90_000,
      limits: {
        sourceBytes: 1024 ** 3,
        sourceMaxFiles: 100_000,
        buildDiskBytes: 4096 * 1024 * 1024,
        buildCacheBytes: 1,
      },
    });
    runtimes.push(rt);
    const s = spec({ kind: "directory", path: dockerfileApp(base) }, { workspaceId: "ws-cap" });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    assert.match(ctx.text("build"), /image cache is over SLIPWAY_BUILD_CACHE_MB \(0 MB\): pruning it/);
    assert.deepEqual(await tagged("ws-cap"), [], "nothing is left in use there");
    assert.ok((await tagged()).includes(builtImageRef(s.deploymentId, s.revisionId)));
    assert.equal(await rt.isBuilt(s), true);
  });

  it("a half-written image a stopped build left is removed, so the store lists again", async () => {
    assert.ok(engine);
    const store = workspaceStorage(dataDir, "ws-broken");
    const flags = ["--root", store.root, "--runroot", store.runroot];
    const ids = await execEngine(engine, [...flags, "images", "--quiet", "--no-trunc"]);
    assert.ok(ids.ok, ids.stderr);
    const id =
      ids.stdout
        .trim()
        .split("\n")[0]
        ?.replace(/^sha256:/, "") ?? "";
    assert.match(id, /^[0-9a-f]{64}$/);
    // What a build killed mid-commit leaves: the image's record without its manifest.
    rmSync(join(store.root, "overlay-images", id, "manifest"));
    const broken = await execEngine(engine, [...flags, "images"]);
    assert.equal(broken.ok, false, "podman cannot list a store with a half-written image");
    assert.match(broken.stderr, /locating item named "manifest"/);

    const rt = newRuntime(dataDir, { healthTimeoutMs: 90_000 });
    runtimes.push(rt);
    const s = spec(
      { kind: "directory", path: dockerfileApp(base, { run: "exit 3" }) },
      { workspaceId: "ws-broken" },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(rt.build(s, ctx), BuildError);
    assert.match(ctx.text("build"), new RegExp(`removing the half-written image ${id.slice(0, 12)}`));
    const after = await execEngine(engine, [...flags, "images", "--quiet"]);
    assert.ok(after.ok, after.stderr);
  });
});
