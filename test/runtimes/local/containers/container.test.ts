// Why over 300 lines: an image revision in real containers (run, switch, crash, orphans, network
// modes, failures), on one engine and image set.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Engine, execEngine } from "../../../../src/runtimes/engine/engine.ts";
import { DeployError, type RevisionSpec, SourceError } from "../../../../src/runtimes/interface.ts";
import { CONTAINER_PORT } from "../../../../src/runtimes/local/containers/container.ts";
import type { LocalRuntime } from "../../../../src/runtimes/local/runtime.ts";
import { startContainerHost } from "../../../helpers/container-host-process.ts";
import {
  DEPLOYMENT_LABEL,
  OWNER_LABEL,
  REVISION_LABEL,
  TestImages,
  testEngine,
} from "../../../helpers/container-images.ts";
import {
  built,
  cleanupTemp,
  hit,
  newRuntime,
  phase,
  spec,
  tempDir,
  waitFor,
} from "../../../helpers/local-runtime.ts";

/** Real containers (podman here, docker where that is what works) of images built on this machine. */

/** Whether any process on this machine has `needle` on its command line. */
function onSomeCommandLine(needle: string): boolean {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(needle)) return true;
    } catch {
      // exited while we looked
    }
  }
  return false;
}

const engine: Engine | undefined = await testEngine();

describe("local runtime: containers", () => {
  const images = engine === undefined ? undefined : new TestImages(engine);
  const runtimes: LocalRuntime[] = [];
  const runtime = (opts: Parameters<typeof newRuntime>[1] = {}, dataDir = tempDir()) => {
    const rt = newRuntime(dataDir, { healthTimeoutMs: 90_000, ...opts });
    runtimes.push(rt);
    return rt;
  };
  let v1 = "";
  let v2 = "";
  let unlabelled = "";
  let exits = "";
  let wrongPort = "";

  before(async () => {
    if (images === undefined) return;
    v1 = await images.build("app", "1", { version: "v1", label: "1.0.0" });
    v2 = await images.build("app", "2", { version: "v2", label: "2.0.0" });
    unlabelled = await images.build("plain", "7.3", { version: "plain" });
    exits = await images.build("exits", "1", { version: "x", cmd: 'echo "starting and exiting"; exit 3' });
    wrongPort = await images.build("wrong-port", "1", {
      version: "w",
      cmd: "exec /bin/httpd -f -p 3000 -h /www",
    });
  });
  after(async () => {
    await Promise.all(runtimes.map((r) => r.close()));
    await images?.cleanup(runtimes.map((r) => r.containers.owner));
    cleanupTemp();
  });
  const skip = images === undefined ? "no container engine or busybox here (CI requires them)" : false;

  it("runs a labelled container with PORT and secrets from an env file, then tears it down", {
    skip,
  }, async () => {
    assert.ok(images);
    const dataDir = tempDir();
    const rt = runtime({}, dataDir);
    const secret = `s3cr=t #${Date.now()}`;
    const s = spec(
      { kind: "image", imageUri: v1 },
      { env: { GREETING: "  hello there ", SECRET: secret, MULTI: "line one\nline two" } },
    );
    const ctx = await built(rt, s);
    assert.match(ctx.text("build"), /is in podman's store; not pulling|is in docker's store; not pulling/);
    assert.match(ctx.text("build"), /image_version 1\.0\.0/);
    assert.equal(await rt.isBuilt(s), true);
    const record = JSON.parse(
      readFileSync(join(dataDir, "apps", s.deploymentId, s.revisionId, "build.json"), "utf8"),
    );
    assert.equal(record.ref, v1);
    assert.notEqual(record.image, v1, "the revision runs the image id, not the tag");

    const deploy = phase();
    const activation = await rt.activate(s, deploy);
    assert.equal(activation.imageVersion, "1.0.0");
    assert.deepEqual((await hit(rt, s.deploymentName)).json(), { version: "v1" });
    const env = (await hit(rt, s.deploymentName, "/cgi-bin/env")).body;
    assert.match(env, new RegExp(`^PORT=${CONTAINER_PORT}$`, "m"));
    assert.match(env, /^GREETING= {2}hello there $/m, "values are passed verbatim");
    assert.ok(env.includes(`SECRET=${secret}\n`));
    assert.ok(env.includes("MULTI=line one\nline two\n"), "a value with a line break arrives whole");
    assert.doesNotMatch(env, /SLIPWAY|DATABASE_URL/, "nothing of the server's environment");

    assert.equal(onSomeCommandLine(secret), false, "no secret on any command line");
    const revisionDir = join(dataDir, "apps", s.deploymentId, s.revisionId);
    assert.deepEqual(
      readdirSync(revisionDir).filter((f) => f.endsWith(".env")),
      [],
      "the env file is gone once the container is created",
    );

    const names = await images.containers(rt.containers.owner, s.deploymentId);
    assert.equal(names.length, 1);
    assert.match(
      names[0] ?? "",
      new RegExp(`^slipway-${s.deploymentId.slice(0, 8)}-${s.revisionId.slice(0, 8)}-1-`),
    );
    const labels = await execEngine(images.engine, [
      "inspect",
      "--format",
      "{{json .Config.Labels}}",
      names[0] ?? "",
    ]);
    const parsed = JSON.parse(labels.stdout) as Record<string, string>;
    assert.equal(parsed[DEPLOYMENT_LABEL], s.deploymentId);
    assert.equal(parsed[REVISION_LABEL], s.revisionId);
    assert.equal(parsed[OWNER_LABEL], rt.containers.owner);

    await rt.teardown(s.deploymentId);
    assert.deepEqual(await images.containers(rt.containers.owner, s.deploymentId), []);
    assert.equal(existsSync(join(dataDir, "apps", s.deploymentId)), false);
  });

  it("switches to a new image with no failed request; limits and min_scale apply", { skip }, async () => {
    assert.ok(images);
    const rt = runtime();
    const first = spec({ kind: "image", imageUri: v1 });
    await built(rt, first);
    await rt.activate(first, phase());
    const second: RevisionSpec = {
      ...first,
      revisionId: `${first.revisionId}-2`,
      source: { kind: "image", imageUri: v2 },
      resourceSpec: { min_scale: 2, memory_limit_mb: 64, cpu_limit: 0.5 },
    };
    await built(rt, second);

    let done = false;
    const seen: string[] = [];
    const failures: string[] = [];
    const loop = (async () => {
      while (!done) {
        const a = await hit(rt, first.deploymentName).catch((err: Error) => ({
          status: 0,
          body: err.message,
        }));
        if (a.status !== 200) failures.push(`${a.status} ${a.body}`);
        else if (seen.at(-1) !== a.body) seen.push(a.body);
      }
    })();
    const deploy = phase();
    const activation = await rt.activate(second, deploy);
    await waitFor("a few answers from v2", () => seen.length >= 2, 30_000);
    done = true;
    await loop;
    assert.deepEqual(failures, []);
    assert.deepEqual(seen, ['{"version":"v1"}', '{"version":"v2"}']);
    assert.equal(activation.imageVersion, "2.0.0");
    assert.match(deploy.text("deploy"), /container limits: --memory 64m --cpus 0\.5/);

    // The replaced revision drains after the switch (off the deploy's critical path): wait for it.
    let names: string[] = [];
    await waitFor(
      "the old revision's containers to go",
      async () => {
        names = await images.containers(rt.containers.owner, first.deploymentId);
        return names.length === 2;
      },
      30_000,
    );
    assert.equal(names.length, 2, "min_scale containers, the old revision's gone");
    for (const name of names) {
      assert.ok(name.includes(second.revisionId.slice(0, 8)));
      const r = await execEngine(images.engine, [
        "inspect",
        "--format",
        "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}",
        name,
      ]);
      assert.equal(r.stdout.trim(), `${64 * 1024 * 1024} 500000000`);
    }
  });

  it("a container that dies is restarted with back-off; close and a new runtime run it again", {
    skip,
  }, async () => {
    assert.ok(images);
    const dataDir = tempDir();
    const rt = runtime({}, dataDir);
    const s = spec({ kind: "image", imageUri: v1 }, { env: { GREETING: "again" } });
    await built(rt, s);
    const deploy = phase();
    await rt.activate(s, deploy);
    const [name] = await images.containers(rt.containers.owner, s.deploymentId);
    assert.ok(name);
    assert.ok((await execEngine(images.engine, ["kill", name])).ok);
    await waitFor("the restart line", () => /restarting in \d+ ms/.test(deploy.text("deploy")), 20_000);
    await waitFor("serving again", () => /is serving again/.test(deploy.text("deploy")), 30_000);
    assert.deepEqual((await hit(rt, s.deploymentName)).json(), { version: "v1" });

    await rt.close();
    assert.deepEqual(await images.containers(rt.containers.owner, s.deploymentId), [], "close stops them");
    const next = runtime({}, dataDir);
    assert.equal(await next.isBuilt(s), true);
    await next.activate(s, phase());
    assert.equal((await hit(next, s.deploymentName, "/cgi-bin/greeting")).json().greeting, "again");
  });

  it("containers a Slipway killed with SIGKILL left are removed before the revision starts again", {
    skip,
  }, async (t) => {
    assert.ok(images);
    const dataDir = tempDir();
    const s = spec({ kind: "image", imageUri: v1 });
    const host = await startContainerHost(t, dataDir, s);
    const rt = runtime({}, dataDir);
    const [left, ...others] = await images.containers(rt.containers.owner, s.deploymentId);
    assert.ok(left);
    assert.deepEqual(others, []);
    const exited = new Promise((resolve) => host.once("exit", resolve));
    host.kill("SIGKILL");
    await exited;
    const running = await execEngine(images.engine, [
      "ps",
      "--format",
      "{{.Names}}",
      "--filter",
      `name=${left}`,
    ]);
    assert.equal(running.stdout.trim(), left, "the container outlives its killed Slipway");

    await rt.activate(s, phase());
    const now = await images.containers(rt.containers.owner, s.deploymentId);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], left, "the leftover is gone; one new container serves");
    assert.deepEqual((await hit(rt, s.deploymentName)).json(), { version: "v1" });
  });

  it("host network: the app gets the host port as PORT", { skip }, async () => {
    const rt = runtime({ containerNetwork: "host" });
    const s = spec({ kind: "image", imageUri: unlabelled });
    await built(rt, s);
    const activation = await rt.activate(s, phase());
    assert.equal(activation.imageVersion, "7.3", "no label: the tag");
    const env = (await hit(rt, s.deploymentName, "/cgi-bin/env")).body;
    const port = Number(/^PORT=(\d+)$/m.exec(env)?.[1]);
    assert.ok(port > 0 && port !== CONTAINER_PORT);
  });

  it("a container that exits at once fails the deploy with its output in the log", { skip }, async () => {
    assert.ok(images);
    const rt = runtime();
    const s = spec({ kind: "image", imageUri: exits });
    await built(rt, s);
    const deploy = phase();
    await assert.rejects(rt.activate(s, deploy), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      assert.match(err.message, /exited with code 3/);
      return true;
    });
    assert.match(deploy.text("deploy"), /starting and exiting/);
    assert.deepEqual(await images.containers(rt.containers.owner, s.deploymentId), []);
  });

  it("a container that listens on a hard-coded port fails soon, naming it and $PORT", {
    skip,
    // Far below the health timeout: only the early verdict passes.
    timeout: 120_000,
  }, async () => {
    assert.ok(images);
    const rt = runtime({ healthTimeoutMs: 300_000 });
    const s = spec({ kind: "image", imageUri: wrongPort });
    await built(rt, s);
    await assert.rejects(rt.activate(s, phase()), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      assert.equal(
        err.message,
        `process web.1 listens on port 3000, not on $PORT (${CONTAINER_PORT}): make it listen on the port in the PORT environment variable`,
      );
      return true;
    });
    assert.deepEqual(await images.containers(rt.containers.owner, s.deploymentId), []);
  });

  it("an image that cannot be pulled is a SourceError naming it", { skip }, async () => {
    const rt = runtime();
    const missing = `localhost/slipway-missing-${process.pid}:1`;
    const s = spec({ kind: "image", imageUri: missing });
    const ctx = phase();
    await assert.rejects(rt.prepare(s, ctx), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.match(
        err.message,
        new RegExp(`^the image ${missing} could not be pulled \\(\\w+ pull exited with code \\d+: .+\\)$`),
      );
      return true;
    });
    assert.match(ctx.text("build"), new RegExp(`pull ${missing}`));
  });

  it("without a usable engine an image revision fails the deploy saying so", async (t) => {
    try {
      execFileSync("docker", ["info"], { stdio: "ignore", timeout: 15_000 });
      t.skip("docker answers here; its absence cannot be shown");
      return;
    } catch {
      // no docker, or no daemon behind its CLI: the failure path is real
    }
    const rt = runtime({ containerEngine: "docker" });
    const s = spec({ kind: "image", imageUri: "registry.example.com/app:1" });
    const ctx = await built(rt, s);
    assert.match(
      ctx.text("build"),
      /no container engine is usable on this machine \(docker\); registry\.example\.com\/app:1 cannot be pulled or run/,
    );
    const deploy = phase();
    await assert.rejects(rt.activate(s, deploy), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      assert.equal(err.message, "no container engine is usable on this machine (docker)");
      return true;
    });
    assert.match(deploy.text("deploy"), /^error: no container engine is usable on this machine \(docker\)$/m);
  });
});
