import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { before, it } from "node:test";
import { gzipSync } from "node:zlib";
import { eq, sql } from "drizzle-orm";
import { FieldsInvalid } from "../../../src/core/errors.ts";
import { rows } from "../../../src/db/client.ts";
import { uploadChunks, uploads } from "../../../src/db/schema/codehost.ts";
import { deployments } from "../../../src/db/schema/deployments.ts";
import { UploadNotFound } from "../../../src/resources/uploads/errors.ts";
import { openUploadedTarball } from "../../../src/resources/uploads/read.ts";
import { CHUNK_BYTES } from "../../../src/resources/uploads/service.ts";
import { verifyUploadedTarball } from "../../../src/resources/uploads/verify.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { entriesOf, makeTarball } from "../../helpers/tarballs.ts";

const LIMIT = 3 * CHUNK_BYTES;

interface UploadUrl {
  upload_url: string;
  source_tarball_path: string;
  object_path: string;
  expires_at: string;
}

/** A deployment row, straight into the table: these tests are about uploads, not deployment rules. */
async function insertDeployment(
  ctx: TestContext,
  opts: { source?: string; workspaceId?: string; organizationId?: string } = {},
): Promise<string> {
  const [row] = await ctx.db.orm
    .insert(deployments)
    .values({
      organizationId: opts.organizationId ?? ctx.orgId,
      workspaceId: opts.workspaceId ?? ctx.workspaceId,
      name: `d-${randomBytes(5).toString("hex")}`,
      source: opts.source ?? "internal_source",
    })
    .returning();
  return (row as { id: string }).id;
}

async function uploadUrl(ctx: TestContext, deploymentId: string, key = ctx.keys.member) {
  return ctx.app.inject({
    method: "POST",
    url: `/v2/deployments/${deploymentId}/upload-url`,
    headers: ctx.headers(key),
  });
}

async function newUrl(ctx: TestContext, deploymentId: string): Promise<UploadUrl> {
  const res = await uploadUrl(ctx, deploymentId);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as UploadUrl;
}

/** PUTs to the upload URL as a client would: the path and query of the URL, no API key. */
function put(
  ctx: TestContext,
  url: string,
  payload: Buffer | Readable,
  contentType = "application/gzip",
  rewrite: (u: URL) => void = () => {},
) {
  const u = new URL(url);
  rewrite(u);
  return ctx.app.inject({
    method: "PUT",
    url: `${u.pathname}${u.search}`,
    headers: { "content-type": contentType },
    payload,
  });
}

async function chunkCount(ctx: TestContext, path: string): Promise<number> {
  const [row] = await rows<{ n: number }>(
    ctx.db.orm,
    sql`SELECT count(c.*)::int AS n FROM uploads u LEFT JOIN upload_chunks c ON c.upload_id = u.id
         WHERE u.source_tarball_path = ${path}`,
  );
  return row?.n ?? 0;
}

const APP_FILES = {
  "package.json": JSON.stringify({ name: "app", scripts: { start: "node server.js" } }),
  "server.js": "console.log('hi')\n",
  "slipway.json": JSON.stringify({ start: "node server.js", healthcheck: "/" }),
};

forEachDatabase(
  "uploads",
  (suite) => {
    let deploymentId = "";

    before(async () => {
      deploymentId = await insertDeployment(suite.ctx);
    });

    it("POST upload-url → 201 with a signed URL under the public URL, a path, and an expiry 15 minutes out", async () => {
      const ctx = suite.ctx;
      const before = Date.now();
      const res = await uploadUrl(ctx, deploymentId);
      assert.equal(res.statusCode, 201, res.body);
      const body = res.json() as UploadUrl;
      assert.deepEqual(Object.keys(body).sort(), [
        "expires_at",
        "object_path",
        "source_tarball_path",
        "upload_url",
      ]);
      assert.equal(body.object_path, body.source_tarball_path, "object_path is the same path");
      assert.match(
        body.upload_url,
        new RegExp(
          `^${ctx.config.publicUrl}${ctx.config.basePath}/v2/uploads/[0-9a-f-]{36}\\?token=[A-Za-z0-9_-]{43}$`,
        ),
      );
      assert.match(
        body.source_tarball_path,
        new RegExp(`^uploads/${deploymentId}/[0-9a-f-]{36}\\.tar\\.gz$`),
      );
      const ttl = Date.parse(body.expires_at) - before;
      assert.ok(ttl > 14 * 60_000 && ttl < 16 * 60_000, `expires in ${ttl} ms`);
      // The token is stored only as a hash.
      const token = new URL(body.upload_url).searchParams.get("token") ?? "";
      const [row] = await ctx.db.orm
        .select()
        .from(uploads)
        .where(eq(uploads.sourceTarballPath, body.source_tarball_path));
      assert.ok(row && !row.tokenHash.includes(token) && row.tokenHash !== token);
      // Each call gives a new URL and path.
      const again = (await uploadUrl(ctx, deploymentId)).json() as UploadUrl;
      assert.notEqual(again.upload_url, body.upload_url);
      assert.notEqual(again.source_tarball_path, body.source_tarball_path);
      assert.equal(again.object_path, again.source_tarball_path);
    });

    it("PUT streams a multi-chunk .tar.gz into ~1 MiB rows; it reads back byte for byte", async () => {
      const ctx = suite.ctx;
      const tarball = await makeTarball({
        ...APP_FILES,
        "blob.bin": randomBytes(Math.floor(2.5 * CHUNK_BYTES)),
      });
      assert.ok(tarball.length > 2 * CHUNK_BYTES && tarball.length < LIMIT);
      const url = await newUrl(ctx, deploymentId);
      const res = await put(ctx, url.upload_url, tarball);
      assert.equal(res.statusCode, 200, res.body);
      const receipt = res.json() as { source_tarball_path: string; size_bytes: number; completed_at: string };
      assert.equal(receipt.source_tarball_path, url.source_tarball_path);
      assert.equal(receipt.size_bytes, tarball.length);
      assert.ok(!Number.isNaN(Date.parse(receipt.completed_at)));
      const chunks = await ctx.db.orm
        .select({ seq: uploadChunks.seq, data: uploadChunks.data })
        .from(uploadChunks)
        .innerJoin(uploads, eq(uploads.id, uploadChunks.uploadId))
        .where(eq(uploads.sourceTarballPath, url.source_tarball_path));
      assert.deepEqual(
        chunks.map((c) => c.data.length).sort((a, b) => b - a),
        [CHUNK_BYTES, CHUNK_BYTES, tarball.length - 2 * CHUNK_BYTES],
      );
      const stream = await openUploadedTarball(ctx.db.orm, url.source_tarball_path);
      const back = await buffer(stream);
      assert.ok(back.equals(tarball), "the stored bytes are the uploaded bytes");
      assert.deepEqual(entriesOf(back).sort(), ["blob.bin", "package.json", "server.js", "slipway.json"]);
      await verifyUploadedTarball(ctx.db.orm, deploymentId, url.source_tarball_path);
    });

    it("end to end: create an internal_source deployment, upload, then a PATCH with the path makes a revision", async () => {
      const ctx = suite.ctx;
      const created = await ctx.app.inject({
        method: "POST",
        url: "/v2/deployments",
        headers: ctx.headers(ctx.keys.member),
        payload: {
          name: `src-${ctx.kind}`,
          source: "internal_source",
          source_config: {},
          source_revision_config: { framework_config_path: "slipway.json" },
        },
      });
      assert.equal(created.statusCode, 201, created.body);
      const deployment = created.json() as { id: string; latest_revision_id: string | null };
      assert.equal(deployment.latest_revision_id, null);
      const url = await newUrl(ctx, deployment.id);
      const patchWith = (path: string) =>
        ctx.app.inject({
          method: "PATCH",
          url: `/v2/deployments/${deployment.id}`,
          headers: ctx.headers(ctx.keys.member),
          payload: {
            source_revision_config: { source_tarball_path: path, framework_config_path: "slipway.json" },
          },
        });
      // Before the PUT the path names nothing usable.
      const early = await patchWith(url.source_tarball_path);
      assert.equal(early.statusCode, 422, early.body);
      assert.equal((await put(ctx, url.upload_url, await makeTarball(APP_FILES))).statusCode, 200);
      const patched = await patchWith(url.source_tarball_path);
      assert.equal(patched.statusCode, 200, patched.body);
      const after = patched.json() as {
        latest_revision_id: string | null;
        source_revision_config: { source_tarball_path: string | null };
      };
      assert.ok(after.latest_revision_id);
      assert.equal(after.source_revision_config.source_tarball_path, url.source_tarball_path);
      // Another deployment's upload cannot be borrowed.
      const foreign = await newUrl(ctx, deploymentId);
      assert.equal((await put(ctx, foreign.upload_url, await makeTarball(APP_FILES))).statusCode, 200);
      const borrowed = await patchWith(foreign.source_tarball_path);
      assert.equal(borrowed.statusCode, 422, borrowed.body);
      assert.deepEqual((borrowed.json() as { detail: { loc: unknown[] }[] }).detail[0]?.loc, [
        "body",
        "source_revision_config",
        "source_tarball_path",
      ]);
    });

    it("PUT accepts a tarball made by the system tar, as application/x-gzip and application/octet-stream", async () => {
      const ctx = suite.ctx;
      const dir = mkdtempSync(join(tmpdir(), "slipway-systar-"));
      try {
        writeFileSync(join(dir, "index.js"), "console.log(1)\n");
        execFileSync("tar", ["czf", join(dir, "src.tar.gz"), "-C", dir, "index.js"]);
        const tarball = readFileSync(join(dir, "src.tar.gz"));
        for (const type of ["application/x-gzip", "application/octet-stream"]) {
          const url = await newUrl(ctx, deploymentId);
          const res = await put(ctx, url.upload_url, tarball, type);
          assert.equal(res.statusCode, 200, `${type}: ${res.body}`);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("a second PUT to a used URL → 409, and the first upload is kept", async () => {
      const ctx = suite.ctx;
      const first = await makeTarball({ "a.txt": "first" });
      const url = await newUrl(ctx, deploymentId);
      assert.equal((await put(ctx, url.upload_url, first)).statusCode, 200);
      const res = await put(ctx, url.upload_url, await makeTarball({ "a.txt": "second" }));
      assert.equal(res.statusCode, 409, res.body);
      assert.equal(typeof (res.json() as { detail: unknown }).detail, "string");
      const back = await buffer(await openUploadedTarball(ctx.db.orm, url.source_tarball_path));
      assert.ok(back.equals(first));
    });

    it("an expired URL → 410, nothing stored", async () => {
      const ctx = suite.ctx;
      const url = await newUrl(ctx, deploymentId);
      await ctx.db.orm
        .update(uploads)
        .set({ expiresAt: sql`now() - interval '1 second'` })
        .where(eq(uploads.sourceTarballPath, url.source_tarball_path));
      const res = await put(ctx, url.upload_url, await makeTarball({ "a.txt": "late" }));
      assert.equal(res.statusCode, 410, res.body);
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
      await assert.rejects(
        verifyUploadedTarball(ctx.db.orm, deploymentId, url.source_tarball_path),
        FieldsInvalid,
      );
    });

    it("a wrong or missing token → 403, an unknown upload → 404; nothing stored and the URL still works", async () => {
      const ctx = suite.ctx;
      const url = await newUrl(ctx, deploymentId);
      const tarball = await makeTarball({ "a.txt": "x" });
      const wrong = await put(ctx, url.upload_url, tarball, "application/gzip", (u) =>
        u.searchParams.set("token", randomBytes(32).toString("base64url")),
      );
      assert.equal(wrong.statusCode, 403, wrong.body);
      const none = await put(ctx, url.upload_url, tarball, "application/gzip", (u) =>
        u.searchParams.delete("token"),
      );
      assert.equal(none.statusCode, 403, none.body);
      const unknown = await put(ctx, url.upload_url, tarball, "application/gzip", (u) => {
        u.pathname = `/v2/uploads/${randomUUID()}`;
      });
      assert.equal(unknown.statusCode, 404, unknown.body);
      // Another upload's token does not open this one.
      const other = await newUrl(ctx, deploymentId);
      const swapped = await put(ctx, url.upload_url, tarball, "application/gzip", (u) =>
        u.searchParams.set("token", new URL(other.upload_url).searchParams.get("token") ?? ""),
      );
      assert.equal(swapped.statusCode, 403, swapped.body);
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
      assert.equal((await put(ctx, url.upload_url, tarball)).statusCode, 200);
    });

    it("over the size limit → 413 and nothing kept, with or without Content-Length; the URL can be retried", async () => {
      const ctx = suite.ctx;
      const big = await makeTarball({ "big.bin": randomBytes(LIMIT + 1024) });
      const url = await newUrl(ctx, deploymentId);
      const declared = await put(ctx, url.upload_url, big);
      assert.equal(declared.statusCode, 413, declared.body);
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
      // Streamed without a length: the limit is counted as the bytes arrive, after chunks were written.
      const streamed = await put(
        ctx,
        url.upload_url,
        Readable.from([big.subarray(0, CHUNK_BYTES * 2), big.subarray(CHUNK_BYTES * 2)]),
      );
      assert.equal(streamed.statusCode, 413, streamed.body);
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
      await assert.rejects(
        verifyUploadedTarball(ctx.db.orm, deploymentId, url.source_tarball_path),
        FieldsInvalid,
      );
      const ok = await put(ctx, url.upload_url, await makeTarball(APP_FILES));
      assert.equal(ok.statusCode, 200, ok.body);
    });

    it("over a real connection: a chunked body over the limit is answered 413 while it is still being sent", async () => {
      const ctx = suite.ctx;
      const address = await ctx.app.listen({ port: 0, host: "127.0.0.1" });
      const url = await newUrl(ctx, deploymentId);
      const big = await makeTarball({ "big.bin": randomBytes(LIMIT * 2) });
      const target = new URL(url.upload_url);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${address}${target.pathname}${target.search}`, {
          method: "PUT",
          headers: { "content-type": "application/gzip" },
        });
        req.on("response", (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        // The server stops reading and closes once it has answered; a write error after that is expected.
        req.on("error", (err) => setTimeout(() => reject(err), 1000));
        let offset = 0;
        const pump = () => {
          while (offset < big.length) {
            const piece = big.subarray(offset, offset + 64 * 1024);
            offset += piece.length;
            if (!req.write(piece)) return void req.once("drain", pump);
          }
          req.end();
        };
        pump();
      });
      assert.equal(status, 413);
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
      // And a good upload over the same kind of connection.
      const ok = await fetch(`${address}${target.pathname}${target.search}`, {
        method: "PUT",
        headers: { "content-type": "application/gzip" },
        body: new Uint8Array(await makeTarball(APP_FILES)),
      });
      assert.equal(ok.status, 200, await ok.text());
    });

    it("not a .tar.gz → 422 (not gzip, gzip of something else, an empty archive, an empty body); nothing kept", async () => {
      const ctx = suite.ctx;
      const url = await newUrl(ctx, deploymentId);
      const bodies = [
        Buffer.from("PK\u0003\u0004 this is a zip, not a tarball"),
        gzipSync(Buffer.from("plain text, compressed, not a tar archive\n".repeat(50))),
        gzipSync(Buffer.alloc(10240)),
        Buffer.alloc(0),
      ];
      for (const body of bodies) {
        const res = await put(ctx, url.upload_url, body);
        assert.equal(res.statusCode, 422, res.body);
        assert.deepEqual((res.json() as { detail: { loc: unknown[] }[] }).detail[0]?.loc, ["body"]);
        assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
      }
      // Not gzip beyond the first chunk too: the check happens before much is stored.
      const res = await put(ctx, url.upload_url, randomBytes(CHUNK_BYTES + 10));
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
    });

    it("a body that is not a tarball media type → 415", async () => {
      const ctx = suite.ctx;
      const url = await newUrl(ctx, deploymentId);
      for (const type of ["application/json", "text/plain", "multipart/form-data; boundary=x"]) {
        const res = await put(ctx, url.upload_url, await makeTarball({ "a.txt": "x" }), type);
        assert.equal(res.statusCode, 415, `${type}: ${res.body}`);
      }
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
    });

    it("upload-url: a deployment of another workspace or organization → 404, unknown → 404", async () => {
      const ctx = suite.ctx;
      const ws2 = await insertDeployment(ctx, { workspaceId: ctx.workspace2Id });
      const res = await uploadUrl(ctx, ws2);
      assert.equal(res.statusCode, 404, res.body);
      const ok = await ctx.app.inject({
        method: "POST",
        url: `/v2/deployments/${ws2}/upload-url`,
        headers: ctx.headers(ctx.keys.member, { "x-tenant-id": ctx.workspace2Id }),
      });
      assert.equal(ok.statusCode, 201, ok.body);
      const bound = await uploadUrl(ctx, deploymentId, ctx.keys.boundMember);
      assert.equal(bound.statusCode, 404, bound.body);
      const other = await insertDeployment(ctx, {
        organizationId: ctx.other.orgId,
        workspaceId: ctx.other.workspaceId,
      });
      assert.equal((await uploadUrl(ctx, other, ctx.keys.admin)).statusCode, 404);
      assert.equal((await uploadUrl(ctx, randomUUID())).statusCode, 404);
      assert.equal((await uploadUrl(ctx, "nope")).statusCode, 422);
    });

    it("upload-url for a deployment whose source is not internal_source → 400", async () => {
      const ctx = suite.ctx;
      for (const source of ["codehost", "internal_docker", "external_docker", "internal_template"]) {
        const id = await insertDeployment(ctx, { source });
        const res = await uploadUrl(ctx, id);
        assert.equal(res.statusCode, 400, `${source}: ${res.body}`);
      }
    });

    it("verifyUploadedTarball: another deployment's upload, an unfinished one, or an unknown path → 422", async () => {
      const ctx = suite.ctx;
      const loc = ["body", "source_revision_config", "source_tarball_path"];
      const otherDeployment = await insertDeployment(ctx);
      const done = await newUrl(ctx, deploymentId);
      assert.equal((await put(ctx, done.upload_url, await makeTarball(APP_FILES))).statusCode, 200);
      const pending = await newUrl(ctx, deploymentId);
      const cases: [string, string][] = [
        [otherDeployment, done.source_tarball_path],
        [deploymentId, pending.source_tarball_path],
        [deploymentId, `uploads/${deploymentId}/${randomUUID()}.tar.gz`],
        [deploymentId, "../../etc/passwd"],
      ];
      for (const [id, path] of cases) {
        await assert.rejects(verifyUploadedTarball(ctx.db.orm, id, path), (err: unknown) => {
          assert.ok(err instanceof FieldsInvalid);
          assert.deepEqual(err.items[0]?.loc, loc);
          return true;
        });
      }
      await assert.rejects(openUploadedTarball(ctx.db.orm, pending.source_tarball_path), (err: unknown) => {
        return err instanceof UploadNotFound;
      });
    });

    it("the upload token never reaches the server log", async () => {
      const ctx = suite.ctx;
      const url = await newUrl(ctx, deploymentId);
      await put(ctx, url.upload_url, await makeTarball({ "a.txt": "x" }));
      const token = new URL(url.upload_url).searchParams.get("token") ?? "";
      assert.ok(token.length > 20);
      assert.ok(!ctx.readLogs().includes(token), "token found in the log");
    });

    it("a deployment's uploads go with it", async () => {
      const ctx = suite.ctx;
      const id = await insertDeployment(ctx);
      const url = await newUrl(ctx, id);
      assert.equal((await put(ctx, url.upload_url, await makeTarball(APP_FILES))).statusCode, 200);
      await ctx.db.orm.delete(deployments).where(eq(deployments.id, id));
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
      const [row] = await ctx.db.orm
        .select()
        .from(uploads)
        .where(eq(uploads.sourceTarballPath, url.source_tarball_path));
      assert.equal(row, undefined);
    });

    it("a deployment deleted while its tarball arrives → 410, and nothing is left behind", async () => {
      const ctx = suite.ctx;
      const id = await insertDeployment(ctx);
      const url = await newUrl(ctx, id);
      const tarball = await makeTarball({ "blob.bin": randomBytes(2 * CHUNK_BYTES) });
      async function* body() {
        yield tarball.subarray(0, CHUNK_BYTES + 100);
        // The first chunk is stored by now; the deployment goes away before the rest arrives.
        for (let i = 0; i < 500 && (await chunkCount(ctx, url.source_tarball_path)) === 0; i++) {
          await new Promise((r) => setTimeout(r, 20));
        }
        await ctx.db.orm.delete(deployments).where(eq(deployments.id, id));
        yield tarball.subarray(CHUNK_BYTES + 100);
      }
      const res = await put(ctx, url.upload_url, Readable.from(body()));
      assert.equal(res.statusCode, 410, res.body);
      assert.equal(await chunkCount(ctx, url.source_tarball_path), 0);
    });

    authMatrix(suite, {
      method: "POST",
      url: () => `/v2/deployments/${deploymentId}/upload-url`,
      workspace: true,
      otherTenantUrl: async (ctx) =>
        `/v2/deployments/${await insertDeployment(ctx, { organizationId: ctx.other.orgId, workspaceId: ctx.other.workspaceId })}/upload-url`,
    });
  },
  { env: { SLIPWAY_UPLOAD_LIMIT_BYTES: String(LIMIT) } },
);
