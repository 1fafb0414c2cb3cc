import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { planBuild } from "../../../../src/runtimes/build/plan/plan.ts";
import { BuildError } from "../../../../src/runtimes/interface.ts";
import { cleanupTemp, tempDir, writeApp } from "../../../helpers/local-runtime.ts";

/** Where a source's own Dockerfile takes over the plan, and where it does not. */

async function plan(files: Record<string, string>, config?: Record<string, unknown>) {
  const dir = writeApp(tempDir(), { config, extra: files });
  const lines: string[] = [];
  const result = await planBuild({
    appDir: dir,
    ...(config === undefined ? {} : { configPath: "app.json" }),
    indexes: { pipExtra: [] },
    log: (l) => lines.push(l),
  });
  return { result, lines };
}

async function failure(files: Record<string, string>, config: Record<string, unknown>): Promise<string> {
  try {
    await plan(files, config);
  } catch (err) {
    assert.ok(err instanceof BuildError, String(err));
    return err.message;
  }
  assert.fail("the plan was expected to fail");
}

const DOCKERFILE = 'FROM scratch\nCMD ["/app"]\n';

describe("build plan: a source's own Dockerfile", () => {
  after(cleanupTemp);

  it("is found at the root when nothing else starts the app", async () => {
    const { result, lines } = await plan({ Dockerfile: DOCKERFILE }, { build_args: { A: "1" } });
    assert.equal(result.kind, "dockerfile");
    assert.ok(result.kind === "dockerfile");
    assert.equal(result.file, "Dockerfile");
    assert.deepEqual(result.buildArgs, { A: "1" });
    assert.ok(
      lines.includes("slipway: detected Dockerfile (Dockerfile): podman build; start: the image's CMD"),
    );
    const other = await plan({ Containerfile: DOCKERFILE }, {});
    assert.equal(other.result.kind === "dockerfile" && other.result.file, "Containerfile");
  });

  it("leaves a Node app that also ships a Dockerfile running as a process", async () => {
    const pkg = JSON.stringify({ name: "n", scripts: { start: "node server.js" } });
    const { result } = await plan({ "package.json": pkg, Dockerfile: DOCKERFILE });
    assert.equal(result.kind, "process");
    assert.ok(result.kind === "process");
    assert.equal(result.start, "npm start");
  });

  it("builds the Dockerfile the app config names, even beside a start command, with dockerfile_lines", async () => {
    const { result, lines } = await plan(
      { "deploy/web.Dockerfile": DOCKERFILE },
      { start: "node server.js", dockerfile: "./deploy/web.Dockerfile", dockerfile_lines: ["USER 1000"] },
    );
    assert.ok(result.kind === "dockerfile");
    assert.equal(result.file, "deploy/web.Dockerfile");
    assert.deepEqual(result.extraLines, ["USER 1000"]);
    assert.ok(
      lines.includes(
        "slipway: detected Dockerfile (deploy/web.Dockerfile): podman build; start: the image's CMD",
      ),
    );
  });

  it("refuses a dockerfile outside the source, a missing one and build args that are not strings", async () => {
    assert.match(
      await failure({}, { dockerfile: "../Dockerfile" }),
      /dockerfile "\.\.\/Dockerfile" points outside the source/,
    );
    assert.match(await failure({}, { dockerfile: "/etc/passwd" }), /must be relative to the source/);
    assert.match(await failure({}, { dockerfile: "Nope" }), /dockerfile "Nope" was not found in the source/);
    assert.match(await failure({ d: "" }, { dockerfile: "d/.." }), /was not found in the source/);
    assert.match(
      await failure({ Dockerfile: DOCKERFILE }, { build_args: { A: 1 } }),
      /"build_args" must be an object of strings/,
    );
    assert.match(
      await failure({ Dockerfile: DOCKERFILE }, { build_args: ["A=1"] }),
      /"build_args" must be an object of strings/,
    );
    assert.match(
      await failure({ Dockerfile: DOCKERFILE }, { build_args: { "A B": "1" } }),
      /build_args name "A B"/,
    );
  });

  it("says it looked for a Dockerfile when nothing starts the app", async () => {
    assert.match(await failure({}, {}), /no start command: .*and no Dockerfile or Containerfile/);
  });
});
