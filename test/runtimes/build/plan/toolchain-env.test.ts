import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { resolveToolchainEnv } from "../../../../src/runtimes/build/plan/toolchain-env.ts";

describe("toolchain env", () => {
  it("fills in the app dir, PATH and HOME where the commands run, leaving other values alone", () => {
    const toolchain = {
      VIRTUAL_ENV: "{app}/.venv",
      PATH: "{app}/.venv/bin:{path}",
      PIP_CACHE_DIR: "{home}/.cache/pip",
      PIP_INDEX_URL: "http://127.0.0.1:3141/simple/{other}",
    };
    assert.deepEqual(resolveToolchainEnv(toolchain, { PATH: "/usr/bin:/bin", HOME: "/home/app" }, "/app"), {
      VIRTUAL_ENV: "/app/.venv",
      PATH: "/app/.venv/bin:/usr/bin:/bin",
      PIP_CACHE_DIR: "/home/app/.cache/pip",
      PIP_INDEX_URL: "http://127.0.0.1:3141/simple/{other}",
    });
    // A base without PATH or HOME: the system PATH and /.
    assert.deepEqual(resolveToolchainEnv({ PATH: "{app}/bin:{path}", H: "{home}" }, {}, "/srv/a"), {
      PATH: "/srv/a/bin:/usr/local/bin:/usr/bin:/bin",
      H: "/",
    });
  });
});
