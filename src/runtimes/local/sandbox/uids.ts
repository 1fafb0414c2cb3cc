import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { UidRange } from "../../../config.ts";
import type { Layout } from "../../shared/layout.ts";

function isExists(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === "EEXIST";
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, "utf8")).trim();
  } catch {
    return undefined;
  }
}

/**
 * One host uid (and the same gid) per deployment, from SLIPWAY_APP_UID_RANGE, for Slipway running
 * as root. Kept in files, no database: `runtime/uids/<uid>` names the deployment holding the uid
 * (created exclusively, so two processes sharing the data dir never hand one uid out twice) and
 * `apps/<deployment>/uid` is the deployment's answer. Teardown gives the uid back.
 */
export class UidAllocator {
  private readonly known = new Map<string, Promise<number>>();

  constructor(
    private readonly layout: Layout,
    private readonly range: UidRange,
  ) {}

  uidFor(deploymentId: string): Promise<number> {
    let uid = this.known.get(deploymentId);
    if (uid === undefined) {
      uid = this.allocate(deploymentId);
      this.known.set(deploymentId, uid);
      uid.catch(() => this.known.delete(deploymentId));
    }
    return uid;
  }

  /** Frees the deployment's uid (its files and processes are gone: teardown). */
  async release(deploymentId: string): Promise<void> {
    this.known.delete(deploymentId);
    await this.forget(deploymentId);
  }

  private async forget(deploymentId: string): Promise<void> {
    const uid = await readText(this.layout.uidFile(deploymentId));
    if (uid === undefined || !/^\d+$/.test(uid)) return;
    const claim = join(this.layout.uidClaimsDir, uid);
    if ((await readText(claim)) === deploymentId) await rm(claim, { force: true });
  }

  private async allocate(deploymentId: string): Promise<number> {
    const own = this.layout.uidFile(deploymentId);
    const recorded = await this.recorded(own);
    if (recorded !== undefined) return recorded;
    // No record, or one outside the range (the range was changed): start over.
    await this.forget(deploymentId);
    await rm(own, { force: true });
    await mkdir(this.layout.uidClaimsDir, { recursive: true, mode: 0o700 });
    const { first, last } = this.range;
    const size = last - first + 1;
    // Start where the id hashes to: different deployments rarely probe the same uids.
    const start = createHash("sha256").update(deploymentId).digest().readUInt32BE(0) % size;
    for (let i = 0; i < size; i++) {
      const uid = first + ((start + i) % size);
      const claim = join(this.layout.uidClaimsDir, String(uid));
      try {
        await writeFile(claim, deploymentId, { flag: "wx", mode: 0o600 });
      } catch (err) {
        if (!isExists(err)) throw err;
        // Ours already (a previous start stopped before recording it), else someone else's.
        if ((await readText(claim)) !== deploymentId) continue;
      }
      await mkdir(this.layout.deploymentDir(deploymentId), { recursive: true });
      try {
        await writeFile(own, String(uid), { flag: "wx", mode: 0o644 });
        return uid;
      } catch (err) {
        if (!isExists(err)) throw err;
        // Another process recorded one first: theirs holds, ours goes back.
        await rm(claim, { force: true });
        const theirs = await this.recorded(own);
        if (theirs !== undefined) return theirs;
        throw new Error(`the uid file of deployment ${deploymentId} is unreadable`);
      }
    }
    throw new Error(
      `every uid of SLIPWAY_APP_UID_RANGE (${first}-${last}) is in use; widen the range to run more deployments`,
    );
  }

  private async recorded(file: string): Promise<number | undefined> {
    const text = await readText(file);
    if (text === undefined || !/^\d+$/.test(text)) return undefined;
    const uid = Number(text);
    return uid >= this.range.first && uid <= this.range.last ? uid : undefined;
  }
}
