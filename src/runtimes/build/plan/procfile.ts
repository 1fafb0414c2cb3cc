import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** The process types of a Procfile, as Heroku reads them: `web` and `worker` are the ones Slipway runs. */
export interface Procfile {
  web?: string;
  worker?: string;
}

/**
 * `<type>: <command>` lines of `Procfile` at the app's root (comments and blank lines skipped; a
 * later line of a type wins, as Heroku's does); undefined when there is no Procfile.
 */
export async function readProcfile(appDir: string): Promise<Procfile | undefined> {
  let text: string;
  try {
    text = await readFile(join(appDir, "Procfile"), "utf8");
  } catch {
    return undefined;
  }
  const found: Procfile = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^([A-Za-z0-9_-]+):\s*(.*\S)\s*$/.exec(line);
    if (!m || line.trimStart().startsWith("#")) continue;
    const [, type, command] = m;
    if (type === "web") found.web = command;
    else if (type === "worker") found.worker = command;
  }
  return found;
}
