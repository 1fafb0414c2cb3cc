import { join } from "node:path";
import { exists } from "../../shared/files.ts";

/**
 * A plain static site: an index.html at the source's root, served as it is, when nothing names a
 * server (no start command in the app config, no Procfile web: line, no package.json `start`).
 */
export async function plainSiteRoot(appDir: string): Promise<string | undefined> {
  return (await exists(join(appDir, "index.html"))) ? "." : undefined;
}
