import { cp, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { type PreparedSource, type RevisionSpec, SourceError } from "../interface.ts";
import { exists } from "../shared/files.ts";
import type { Layout } from "../shared/layout.ts";
import { cloneAt, gitEnv } from "./git.ts";
import type { LocalLimits } from "./limits.ts";
import { extractTarball } from "./tarball.ts";

/**
 * Archives made with `tar czf app.tgz app/` hold one top directory. When the file the build looks
 * for (the app config, else package.json) is inside it and not at the top, that directory is the app.
 */
async function unwrapSingleDirectory(appDir: string, lookFor: string): Promise<void> {
  const entries = await readdir(appDir, { withFileTypes: true });
  const only = entries[0];
  if (entries.length !== 1 || only === undefined || !only.isDirectory()) return;
  if ((await exists(join(appDir, lookFor))) || !(await exists(join(appDir, only.name, lookFor)))) return;
  const moved = `${appDir}.unwrap`;
  await rename(join(appDir, only.name), moved);
  await rm(appDir, { recursive: true, force: true });
  await rename(moved, appDir);
}

/** Puts the revision's source into `appDir` (which exists and is empty). */
export async function fetchSource(
  layout: Layout,
  spec: RevisionSpec,
  appDir: string,
  signal: AbortSignal,
  log: (line: string) => void,
  limits: LocalLimits,
): Promise<PreparedSource> {
  const source = spec.source;
  switch (source.kind) {
    case "git": {
      const commitSha = await cloneAt({
        url: source.url,
        ref: source.ref,
        commitSha: source.commitSha,
        dir: appDir,
        env: gitEnv(layout),
        signal,
        log,
        limits,
      });
      return { commitSha };
    }
    case "tarball": {
      log("Unpacking the uploaded source");
      let stream: Awaited<ReturnType<typeof source.open>>;
      try {
        stream = await source.open();
      } catch (err) {
        if (err instanceof SourceError) throw err;
        throw new SourceError(`the uploaded archive could not be opened: ${(err as Error).message}`);
      }
      await extractTarball(stream, appDir, signal, limits);
      await unwrapSingleDirectory(appDir, spec.frameworkConfigPath || "package.json");
      return {};
    }
    case "directory": {
      // The folder's name only: tenants see no host path.
      log(`Copying ${basename(source.path)}`);
      let isDir = false;
      try {
        isDir = (await stat(source.path)).isDirectory();
      } catch {
        isDir = false;
      }
      if (!isDir) throw new SourceError(`source directory ${source.path} does not exist`);
      await cp(source.path, appDir, { recursive: true, verbatimSymlinks: true });
      return {};
    }
    case "image":
      log(`Image ${source.imageUri}: nothing to fetch`);
      return {};
  }
}
