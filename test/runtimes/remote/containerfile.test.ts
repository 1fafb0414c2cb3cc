import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BuildError } from "../../../src/runtimes/interface.ts";
import { containerfile } from "../../../src/runtimes/remote/containerfile.ts";

const base = {
  baseImage: "localhost/base:1",
  port: 8080,
  revisionId: "r1",
  env: {},
  start: "node server.js",
};

describe("listener image Containerfile", () => {
  it("no steps: only FROM, the copy, PORT and CMD (a base without node or npm builds)", () => {
    const text = containerfile({ ...base, steps: [] });
    assert.doesNotMatch(text, /^RUN/m);
    assert.match(text, /^FROM localhost\/base:1$/m);
    assert.match(text, /^COPY app\/ \/app\/$/m);
    assert.match(text, /^ENV PORT=8080$/m);
    assert.match(text, /^CMD \["sh","-c","node server.js"\]$/m);
  });

  it("steps in order, each in the exec form; commands and env values are quoted, never interpreted", () => {
    const text = containerfile({
      ...base,
      steps: [
        { label: "install", command: 'npm ci && echo "done"' },
        { label: "build", command: "npm run build\nRUN evil" },
      ],
      env: { MODE: 'say "hi" $HOME \\ ok' },
    });
    const runs = text.split("\n").filter((l) => l.startsWith("RUN "));
    assert.deepEqual(runs, [
      'RUN ["sh","-c","npm ci && echo \\"done\\""]',
      'RUN ["sh","-c","npm run build\\nRUN evil"]',
    ]);
    assert.match(text, /^ENV MODE="say \\"hi\\" \\\$HOME \\\\ ok"$/m);
    // One line per instruction: a newline in a command cannot start another instruction.
    assert.equal(text.split("\n").filter((l) => l.startsWith("RUN evil")).length, 0);
  });

  it("the framework config's dockerfile_lines come after the steps, before the label, EXPOSE and CMD", () => {
    const text = containerfile({
      ...base,
      steps: [{ label: "install", command: "npm ci" }],
      extraLines: ["RUN apt-get install -y curl", "ENV EXTRA=1"],
    });
    const lines = text.trimEnd().split("\n");
    const at = (prefix: string) => lines.findIndex((l) => l.startsWith(prefix));
    assert.deepEqual(lines.slice(at("RUN [") + 1, at("LABEL")), [
      "RUN apt-get install -y curl",
      "ENV EXTRA=1",
    ]);
    assert.equal(lines.at(-1), 'CMD ["sh","-c","node server.js"]');
  });

  it("an env value with a line break is a BuildError", () => {
    assert.throws(() => containerfile({ ...base, steps: [], env: { A: "x\nRUN y" } }), BuildError);
  });
});
