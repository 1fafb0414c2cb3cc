import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { freePort } from "../e2e/stack.ts";
import { runCli } from "../helpers/cli.ts";
import { call, createDocker, type Deployment } from "../helpers/deployments.ts";
import { forEachDatabase } from "../helpers/harness.ts";

interface Domain {
  id: string;
  hostname: string;
  verification: { status: string; record_name: string; token: string; reason: string | null };
  certificate: { status: string };
}

const apiPort = await freePort();

forEachDatabase(
  "slipway domains add|ls|rm against a real server",
  (suite, kind) => {
    const home = mkdtempSync(join(tmpdir(), "slipway-cli-domains-"));
    let env: Record<string, string>;
    let dep: Deployment;
    const host = `www.${kind}.example.com`;
    before(async () => {
      await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
      env = {
        HOME: home,
        XDG_CONFIG_HOME: join(home, "config"),
        SLIPWAY_URL: `http://127.0.0.1:${apiPort}`,
        SLIPWAY_API_KEY: suite.ctx.keys.member,
      };
      dep = await createDocker(suite.ctx);
    });
    after(() => rmSync(home, { recursive: true, force: true }));

    it("add prints the TXT record to create; --json gives the domain", async () => {
      const human = await runCli(["domains", "add", dep.name, host.toUpperCase()], env);
      assert.equal(human.code, 0, human.stderr);
      const [domain] = (await call<Domain[]>(suite.ctx, "GET", `/v2/deployments/${dep.id}/domains`)).body;
      assert.ok(domain);
      assert.equal(domain.hostname, host);
      assert.match(
        human.stdout,
        new RegExp(
          `TXT record _slipway\\.${host.replaceAll(".", "\\.")} holding ${domain.verification.token}`,
        ),
      );
      assert.match(human.stdout, /pending/);

      const json = await runCli(["domains", "add", dep.name, `api.${kind}.example.com`, "--json"], env);
      assert.equal(json.code, 0, json.stderr);
      const added = JSON.parse(json.stdout) as Domain;
      assert.equal(added.hostname, `api.${kind}.example.com`);
      assert.equal(added.verification.record_name, `_slipway.api.${kind}.example.com`);
      assert.equal(added.certificate.status, "none");
    });

    it("ls lists the deployment's domains", async () => {
      const json = await runCli(["domains", "ls", dep.name, "--json"], env);
      assert.equal(json.code, 0, json.stderr);
      const list = JSON.parse(json.stdout) as Domain[];
      assert.deepEqual(
        list.map((d) => d.hostname),
        [host, `api.${kind}.example.com`],
      );
      const human = await runCli(["domains", "ls", dep.name], env);
      assert.equal(human.code, 0);
      assert.match(human.stdout, new RegExp(host.replaceAll(".", "\\.")));
    });

    it("refusals keep their exit codes: a bad hostname 2, a taken one 5, an unknown deployment or domain 4", async () => {
      const bad = await runCli(["domains", "add", dep.name, "*.example.com"], env);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, /[Ww]ildcard/);
      const taken = await runCli(["domains", "add", dep.name, host], env);
      assert.equal(taken.code, 5, taken.stderr);
      assert.equal((await runCli(["domains", "ls", "no-such-app"], env)).code, 4);
      const unknown = await runCli(["domains", "rm", dep.name, "nope.example.com"], env);
      assert.equal(unknown.code, 4);
      assert.match(unknown.stderr, /has no domain nope\.example\.com/);
      assert.equal((await runCli(["domains"], env)).code, 2);
      assert.equal((await runCli(["domains", "add", dep.name], env)).code, 2);
      assert.equal((await runCli(["domains", "ls", dep.name, "extra"], env)).code, 2);
      // A viewer may list but not add.
      const viewer = { ...env, SLIPWAY_API_KEY: suite.ctx.keys.viewer };
      assert.equal((await runCli(["domains", "ls", dep.name], viewer)).code, 0);
      assert.equal((await runCli(["domains", "add", dep.name, "v.example.com"], viewer)).code, 3);
    });

    it("rm removes a domain by its hostname", async () => {
      const rm = await runCli(["domains", "rm", dep.name, `${host}.`], env);
      assert.equal(rm.code, 0, rm.stderr);
      assert.match(rm.stdout, new RegExp(`Removed ${host.replaceAll(".", "\\.")} from ${dep.name}`));
      const list = (await call<Domain[]>(suite.ctx, "GET", `/v2/deployments/${dep.id}/domains`)).body;
      assert.deepEqual(
        list.map((d) => d.hostname),
        [`api.${kind}.example.com`],
      );
    });
  },
  { env: { SLIPWAY_APPS_DOMAIN: "apps.test" } },
);
