import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { createSlipway, formatDetail, type Slipway, SlipwayError, unwrap } from "slipway/sdk";
import { packDirectory, uploadDirectory } from "../../src/sdk/upload.ts";
import { freePort } from "../e2e/stack.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { entriesOf } from "../helpers/tarballs.ts";

const port = await freePort();

forEachDatabase(
  "SDK against a listening server",
  (suite) => {
    let base: string;
    let admin: Slipway;
    const dir = mkdtempSync(join(tmpdir(), "slipway-sdk-dir-"));
    before(async () => {
      await suite.ctx.app.listen({ port, host: "127.0.0.1" });
      base = `http://127.0.0.1:${port}`;
      admin = createSlipway({ baseUrl: base, apiKey: suite.ctx.keys.admin });
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it("typed calls return data; errors carry status and the server's detail", async () => {
      const page = await unwrap(admin.api.GET("/v2/deployments", { params: { query: { limit: 5 } } }));
      assert.deepEqual(page.resources, []);
      const viewer = createSlipway({ baseUrl: base, apiKey: suite.ctx.keys.viewer });
      const denied = await unwrap(
        viewer.api.POST("/v2/deployments", {
          body: {
            name: "x",
            source: "internal_template",
            source_revision_config: { repo_ref: "hello-http" },
          },
        }),
      ).catch((e: unknown) => e);
      assert.ok(denied instanceof SlipwayError);
      assert.equal(denied.status, 403);
      const bad = await unwrap(admin.api.GET("/v2/deployments", { params: { query: { limit: 500 } } })).catch(
        (e: unknown) => e,
      );
      assert.ok(bad instanceof SlipwayError);
      assert.equal(bad.status, 422);
      assert.match(bad.message, /^limit: /m);
      const none = await admin
        .raw("GET", "/v2/deployments/00000000-0000-4000-8000-000000000000")
        .catch((e: unknown) => e);
      assert.ok(none instanceof SlipwayError);
      assert.equal(none.status, 404);
    });

    it("an unreachable server is SlipwayError status 0", async () => {
      const down = createSlipway({ baseUrl: "http://127.0.0.1:1", apiKey: "x" });
      const err = await unwrap(down.api.GET("/v2/deployments", {})).catch((e: unknown) => e);
      assert.ok(err instanceof SlipwayError);
      assert.equal(err.status, 0);
      assert.match(err.message, /Cannot reach http:\/\/127\.0\.0\.1:1/);
    });

    it("formatDetail turns 422 items into field: message lines", () => {
      assert.equal(
        formatDetail([
          { loc: ["body", "source_config", "repo_url"], msg: "is required" },
          { loc: ["query", "limit"], msg: "too big" },
        ]),
        "source_config.repo_url: is required\nlimit: too big",
      );
    });

    it("packs a directory without .git or node_modules, and uploads it to an internal_source deployment", async () => {
      writeFileSync(join(dir, "server.js"), "console.log(1)");
      mkdirSync(join(dir, "node_modules", "x"), { recursive: true });
      writeFileSync(join(dir, "node_modules", "x", "i.js"), "");
      mkdirSync(join(dir, ".git"));
      writeFileSync(join(dir, ".git", "HEAD"), "ref");
      const names = entriesOf(await packDirectory(dir));
      assert.ok(names.includes("./server.js"), names.join(","));
      assert.ok(!names.some((n) => n.includes("node_modules") || n.includes(".git")), names.join(","));
      const dep = await unwrap(
        admin.api.POST("/v2/deployments", { body: { name: "sdk-upload", source: "internal_source" } }),
      );
      const path = await uploadDirectory(admin, dep.id, dir);
      assert.match(path, /\S/);
      const patched = await unwrap(
        admin.api.PATCH("/v2/deployments/{deployment_id}", {
          params: { path: { deployment_id: dep.id } },
          body: {
            source_revision_config: { source_tarball_path: path, framework_config_path: "slipway.json" },
          },
        }),
      );
      assert.ok(patched.latest_revision_id);
    });
  },
  // Upload URLs are absolute, built from the public URL: the port this suite listens on.
  { env: { SLIPWAY_PUBLIC_URL: `http://127.0.0.1:${port}` } },
);
