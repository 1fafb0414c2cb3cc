import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  PIPFILE_REQUIREMENTS,
  writePipfileRequirements,
} from "../../../../../src/runtimes/build/plan/python/pipfile.ts";
import { BuildError } from "../../../../../src/runtimes/interface.ts";
import { cleanupTemp, tempDir } from "../../../../helpers/local-runtime.ts";

async function converted(lock: unknown): Promise<string[]> {
  const dir = tempDir();
  writeFileSync(join(dir, "Pipfile.lock"), typeof lock === "string" ? lock : JSON.stringify(lock));
  await writePipfileRequirements(dir, () => {});
  return readFileSync(join(dir, PIPFILE_REQUIREMENTS), "utf8").trim().split("\n").slice(1);
}

describe("Pipfile.lock to requirements", () => {
  after(cleanupTemp);

  it("writes the default pins with their hashes when every entry has them, never develop", async () => {
    assert.deepEqual(
      await converted({
        default: {
          requests: { version: "==2.31.0", extras: ["socks"], hashes: ["sha256:aa", "sha256:bb"] },
          "typing-extensions": {
            version: "==4.9.0",
            markers: "python_version < '3.12'",
            hashes: ["sha256:cc"],
          },
        },
        develop: { pytest: { version: "==8.0.0", hashes: ["sha256:dd"] } },
      }),
      [
        "requests[socks]==2.31.0 --hash=sha256:aa --hash=sha256:bb",
        "typing-extensions==4.9.0 ; python_version < '3.12' --hash=sha256:cc",
      ],
    );
  });

  it("drops every hash when one entry has none (pip's hash mode needs all), and writes paths and git pins", async () => {
    assert.deepEqual(
      await converted({
        default: {
          greetlib: { version: "==1.0", hashes: ["sha256:aa"] },
          mypkg: { path: ".", editable: true },
          other: { git: "https://example.test/other.git", ref: "abc123" },
          anything: { version: "*" },
        },
      }),
      ["greetlib==1.0", "-e .", "other @ git+https://example.test/other.git@abc123", "anything"],
    );
  });

  it("a lock that is not JSON, or an entry pip cannot install, is a BuildError", async () => {
    await assert.rejects(converted("{not json"), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.match(err.message, /Pipfile\.lock could not be read as JSON/);
      return true;
    });
    await assert.rejects(converted({ default: [] }), /"default" maps package names/);
    await assert.rejects(
      converted({ default: { bad: { version: 3 } } }),
      /"bad" is not a pin pip can install/,
    );
    await assert.rejects(converted({ default: { "--index-url": {} } }), /is not a pin/);
  });
});
