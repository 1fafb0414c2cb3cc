import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createTestDatabase, DB_KINDS } from "../../helpers/databases.ts";
import { runSlipway, type SlipwayProcess } from "../../helpers/process.ts";
import { makeTarball } from "../../helpers/tarballs.ts";

const SERVING = /Slipway is serving (http:\/\/\S+) on/;

async function api<T>(base: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** A PUT by node:http: the server may answer (409) before it reads the body, which fetch takes for a failure. */
function put(url: string, body: Buffer): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(url), {
      method: "PUT",
      headers: { "content-type": "application/gzip", "content-length": String(body.length) },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.end(body);
  });
}

/**
 * The sweep's finding: a PUT cut off by a crash left its upload "in progress", so every retry after
 * the restart answered 409 until the URL expired (15 minutes).
 */
describe("an upload interrupted by a crash", () => {
  for (const kind of DB_KINDS) {
    it(`can be retried as soon as the server is back [${kind}]`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "slipway-upload-crash-"));
      const db = kind === "postgres" ? await createTestDatabase("postgres") : undefined;
      after(async () => {
        rmSync(dataDir, { recursive: true, force: true });
        await db?.drop();
      });
      const env: Record<string, string> = {
        SLIPWAY_DATA_DIR: dataDir,
        PORT: "0",
        SLIPWAY_RECONCILER: "false",
        ...(db?.url ? { DATABASE_URL: db.url } : {}),
      };
      let server: SlipwayProcess = runSlipway(["serve"], env);
      try {
        const [, base] = await server.waitFor(SERVING, 120_000);
        const [, key] = await server.waitFor(/^\s+(sw_[A-Za-z0-9_-]{43})$/m);
        const created = await api<{ id: string }>(base as string, key as string, "POST", "/v2/deployments", {
          name: "crashy",
          source: "internal_source",
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const issued = await api<{ upload_url: string }>(
          base as string,
          key as string,
          "POST",
          `/v2/deployments/${created.body.id}/upload-url`,
        );
        assert.equal(issued.status, 201);
        const tarball = await makeTarball({ "app.js": "console.log('hi')\n".repeat(1000) });

        // A PUT that promises more than it sends: the server is receiving it when it dies.
        // PORT=0: the issued URL names the public URL's port, not the one the server got.
        const issuedUrl = new URL(issued.body.upload_url);
        const target = new URL(`${issuedUrl.pathname}${issuedUrl.search}`, base as string);
        const cut = request(target, {
          method: "PUT",
          headers: { "content-type": "application/gzip", "content-length": String(tarball.length * 10) },
        });
        cut.on("error", () => {});
        cut.write(tarball.subarray(0, 200));
        // The server took the upload: another PUT meanwhile is told it is in progress.
        let meanwhile = await put(target.href, tarball);
        for (let i = 0; i < 50 && meanwhile.status !== 409; i++) {
          await new Promise((r) => setTimeout(r, 100));
          meanwhile = await put(target.href, tarball);
        }
        assert.equal(meanwhile.status, 409, JSON.stringify(meanwhile.body));
        assert.match(String(meanwhile.body.detail), /in progress/);

        server.proc.kill("SIGKILL");
        await server.exited;
        cut.destroy();
        server = runSlipway(["serve"], env);
        const [, again] = await server.waitFor(SERVING, 120_000);
        const retryUrl = new URL(`${target.pathname}${target.search}`, again as string).href;
        const retried = await put(retryUrl, tarball);
        assert.equal(retried.status, 200, JSON.stringify(retried.body));
        assert.equal(
          retried.body.size_bytes,
          tarball.length,
          "the whole retried tarball, nothing of the cut one",
        );
        const twice = await put(retryUrl, tarball);
        assert.equal(twice.status, 409, "a finished upload is still single-use");
      } finally {
        server.proc.kill("SIGKILL");
        await server.exited;
      }
    });
  }
});
