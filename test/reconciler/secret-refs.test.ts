import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { resolveSecretReferences } from "../../src/reconciler/secret-refs.ts";
import { DeployError } from "../../src/runtimes/interface.ts";

/** Files on disk in the layout of a mounted Kubernetes Secret; no database is involved. */
describe("secret_references resolved from SLIPWAY_SECRET_REFS_DIR", () => {
  const dir = mkdtempSync(join(tmpdir(), "slipway-refs-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "db-creds"));
  writeFileSync(join(dir, "db-creds", "password"), "p@ss word\n");
  writeFileSync(join(dir, "db-creds", "nul"), "a\0b");
  mkdirSync(join(dir, "db-creds", "folder"));
  // What kubelet mounts: the keys are links into a timestamped ..data directory.
  mkdirSync(join(dir, "mounted", "..2026_01_01"), { recursive: true });
  writeFileSync(join(dir, "mounted", "..2026_01_01", "token"), "from-kubelet");
  symlinkSync("..2026_01_01", join(dir, "mounted", "..data"));
  symlinkSync("..data/token", join(dir, "mounted", "token"));
  writeFileSync(join(dir, "outside"), "never");

  const ref = (name: string, secret_name: string, secret_key: string) => ({ name, secret_name, secret_key });
  const fails = async (refs: unknown, message: string | RegExp, refsDir: string | null = dir) => {
    await assert.rejects(resolveSecretReferences(refsDir ?? undefined, refs), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      if (typeof message === "string") assert.equal(err.message, message);
      else assert.match(err.message, message);
      return true;
    });
  };

  it("reads each file whole (a trailing newline included), following a mounted Secret's links", async () => {
    assert.deepEqual(
      await resolveSecretReferences(dir, [
        ref("DB_PASS", "db-creds", "password"),
        ref("TOKEN", "mounted", "token"),
      ]),
      { DB_PASS: "p@ss word\n", TOKEN: "from-kubelet" },
    );
    assert.deepEqual(await resolveSecretReferences(undefined, null), {});
    assert.deepEqual(await resolveSecretReferences(undefined, []), {});
  });

  it("a missing file fails the deploy naming the reference, not the directory", async () => {
    await fails(
      [ref("DB_PASS", "db-creds", "password"), ref("API_KEY", "api", "key")],
      'secret reference API_KEY (secret "api", key "key") was not found: SLIPWAY_SECRET_REFS_DIR has no api/key',
    );
    await fails([ref("F", "db-creds", "folder")], /^secret reference F .* is not a file$/);
  });

  it("without SLIPWAY_SECRET_REFS_DIR a reference cannot be resolved", async () => {
    await fails(
      [ref("DB_PASS", "db-creds", "password")],
      'secret reference DB_PASS (secret "db-creds", key "password") cannot be resolved: SLIPWAY_SECRET_REFS_DIR is not set on this server',
      null,
    );
  });

  it("refuses names that would leave the directory, values with NUL, and malformed entries", async () => {
    await fails([ref("X", "db-creds", "..")], /is not a usable file name$/);
    await fails([ref("X", "..", "outside")], /is not a usable file name$/);
    await fails([ref("X", "db-creds/../x", "k")], /is not a usable file name$/);
    await fails([ref("N", "db-creds", "nul")], /holds a NUL byte/);
    await fails([{ name: "X" }], "a stored secret reference is malformed");
  });
});
