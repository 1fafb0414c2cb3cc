import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { buffer } from "node:stream/consumers";
import * as tar from "tar";

/** A real .tar.gz of the given files, made with the `tar` package. */
export async function makeTarball(files: Record<string, string | Buffer>): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), "slipway-tarball-"));
  try {
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), content);
    }
    return await buffer(tar.c({ gzip: true, cwd: dir, portable: true }, Object.keys(files)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The names of the entries of a .tar.gz, read back with the `tar` package. */
export function entriesOf(tarball: Buffer): string[] {
  const dir = mkdtempSync(join(tmpdir(), "slipway-tarball-"));
  try {
    const file = join(dir, "t.tar.gz");
    writeFileSync(file, tarball);
    const names: string[] = [];
    tar.t({ file, sync: true, onReadEntry: (entry) => names.push(entry.path) });
    return names;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
