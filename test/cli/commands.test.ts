import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { freePort } from "../e2e/stack.ts";
import { APP_FILES, runCli } from "../helpers/cli.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const apiPort = await freePort();

forEachDatabase("slipway CLI commands: exit codes, keys, providers, listeners", (suite) => {
  let env: Record<string, string>;
  const home = mkdtempSync(join(tmpdir(), "slipway-cli-home-"));
  const dir = join(home, "webapp");
  const name = "webapp";
  before(async () => {
    mkdirSync(dir);
    for (const [file, text] of Object.entries(APP_FILES("1"))) writeFileSync(join(dir, file), text);
    await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
    const created = await suite.ctx.app.inject({
      method: "POST",
      url: "/v2/deployments",
      headers: suite.ctx.headers(suite.ctx.keys.admin),
      payload: { name, source: "internal_source" },
    });
    assert.equal(created.statusCode, 201, created.body);
    env = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, "config"),
      SLIPWAY_URL: `http://127.0.0.1:${apiPort}`,
      SLIPWAY_API_KEY: suite.ctx.keys.admin,
    };
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  it("exit codes: 2 usage, 3 permission, 4 not found, 5 conflict, 6 unreachable; errors print detail, not a stack", async () => {
    const usage = await runCli(["deploy", dir, "--bogus"], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /Unknown option --bogus/);
    const invalid = await runCli(["ls", "--limit", "500"], env);
    assert.equal(invalid.code, 2);
    const denied = await runCli(["deploy", dir, "--name", "viewer-try"], {
      ...env,
      SLIPWAY_API_KEY: suite.ctx.keys.viewer,
    });
    assert.equal(denied.code, 3, denied.stderr);
    const missing = await runCli(["status", "no-such-app"], env);
    assert.equal(missing.code, 4);
    assert.match(missing.stderr, /No deployment named no-such-app/);
    const ws = await runCli(["workspaces", "create", "dup"], env);
    assert.equal(ws.code, 0, ws.stderr);
    const dup = await runCli(["workspaces", "create", "dup"], env);
    assert.equal(dup.code, 5);
    assert.match(dup.stderr, /^Error: .+/m);
    const down = await runCli(["ls"], { ...env, SLIPWAY_URL: `http://127.0.0.1:${await freePort()}` });
    assert.equal(down.code, 6);
    for (const r of [usage, denied, missing, dup, down]) assert.doesNotMatch(r.stderr, /\n\s+at /);
    const noYes = await runCli(["delete", name, "--no-input"], env);
    assert.equal(noYes.code, 2);
    assert.match(noYes.stderr, /--yes/);
  });

  it("keys, providers and listeners", async (t) => {
    const key = await runCli(["keys", "create", "--role", "viewer", "--description", "ci", "--json"], env);
    assert.equal(key.code, 0, key.stderr);
    const { id } = JSON.parse(key.stdout) as { id: string };
    const revoked = await runCli(["keys", "revoke", id], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    const provider = await runCli(
      [
        "providers",
        "create",
        "--provider-id",
        "gh",
        "--name",
        "GitHub",
        "--client-id",
        "c",
        "--client-secret",
        "s",
        "--auth-url",
        "https://auth.example.com/a",
        "--token-url",
        "https://auth.example.com/t",
      ],
      env,
    );
    assert.equal(provider.code, 0, provider.stderr);
    assert.match((await runCli(["providers", "list"], env)).stdout, /gh\s+GitHub/);
    assert.equal((await runCli(["providers", "delete", "gh"], env)).code, 0);
    assert.equal((await runCli(["providers", "get", "gh"], env)).code, 4);
    const probe = await suite.ctx.app.inject({
      method: "GET",
      url: "/v2/listeners",
      headers: suite.ctx.headers(suite.ctx.keys.admin),
    });
    if (probe.statusCode === 404) {
      t.skip("GET /v2/listeners is not on this branch yet (k8s-control adds it)");
      return;
    }
    const listeners = await runCli(["listeners", "list", "--json"], env);
    assert.equal(listeners.code, 0, listeners.stderr);
    assert.ok(Array.isArray(JSON.parse(listeners.stdout).resources));
  });
});
