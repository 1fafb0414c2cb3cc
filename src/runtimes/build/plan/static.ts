import { stat } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { exists } from "../../shared/files.ts";
import { fail } from "../app-config.ts";

/**
 * A plain static site: an index.html at the source's root, served as it is, when nothing names a
 * server (no start command in the app config, no Procfile web: line, no package.json `start`).
 */
export async function plainSiteRoot(appDir: string): Promise<string | undefined> {
  return (await exists(join(appDir, "index.html"))) ? "." : undefined;
}

/**
 * After the build: the directory to serve is inside the source and holds an index.html. Checked
 * here so a build writing elsewhere (a changed `outDir`) fails the build, naming the directory,
 * rather than the deploy.
 */
export async function checkStaticOutput(
  appDir: string,
  root: string,
  log: (line: string) => void,
): Promise<void> {
  const dir = resolve(appDir, root);
  if (dir !== resolve(appDir) && !dir.startsWith(resolve(appDir) + sep)) {
    fail(log, `the static site's directory "${root}" is outside the source`);
  }
  const index = await stat(join(dir, "index.html")).catch(() => undefined);
  if (index?.isFile()) return;
  fail(
    log,
    `the build left no index.html in "${root}", the directory Slipway serves: build into it, ` +
      `or give a start command (app config "start", a Procfile web: line, package.json "start") to run a server`,
  );
}
