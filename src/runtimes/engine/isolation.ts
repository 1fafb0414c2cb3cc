import { appendFile, readFile } from "node:fs/promises";
import { succeeds } from "../shared/exec.ts";
import { type Engine, type EngineIsolation, execEngine } from "./engine.ts";

/**
 * What an engine can apply on this machine (a firewall on its bridges, user namespaces), found once
 * with the engine; the local runtime's containers (local/containers/) act on it.
 */

/** What podman documents for rootful `--userns=auto`: the `containers` user's subordinate ranges. */
export const SUBORDINATE_LINE = "containers:2147483647:2147483648";

function hasContainersEntry(text: string): boolean {
  return text.split("\n").some((line) => line.trim().startsWith("containers:"));
}

/**
 * Adds the `containers` range to each file that has none (idempotent). Returns whether every file
 * has one afterwards; a file that cannot be read or written counts as missing.
 */
export async function ensureSubordinateIds(files: string[]): Promise<boolean> {
  let all = true;
  for (const file of files) {
    try {
      const text = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return "";
        throw err;
      });
      if (hasContainersEntry(text)) continue;
      const sep = text === "" || text.endsWith("\n") ? "" : "\n";
      await appendFile(file, `${sep}${SUBORDINATE_LINE}\n`);
    } catch {
      all = false;
    }
  }
  return all;
}

/** Finds what `engine` can apply here; as root, sets up podman's subordinate ranges if missing. */
export async function detectIsolation(
  engine: Engine,
  subordinateFiles = ["/etc/subuid", "/etc/subgid"],
): Promise<EngineIsolation> {
  const missing: string[] = [];
  const root = process.getuid?.() === 0;
  let firewall = false;
  if (!root) {
    missing.push("Slipway is not root, so it cannot install the nftables rules on containers' bridges");
  } else if (!(await succeeds("nft", ["list", "tables"]))) {
    missing.push("nft is not usable: apt-get install nftables");
  } else {
    firewall = true;
  }
  let userns = false;
  if (engine.name === "podman") {
    if (root) await ensureSubordinateIds(subordinateFiles);
    const texts = await Promise.all(subordinateFiles.map((f) => readFile(f, "utf8").catch(() => "")));
    userns = texts.every(hasContainersEntry);
    if (!userns) {
      missing.push(
        `no "containers" range in ${subordinateFiles.join(" and ")} for podman --userns=auto: add the line ${SUBORDINATE_LINE} to each`,
      );
    }
  } else {
    const info = await execEngine(engine, ["info", "--format", "{{json .SecurityOptions}}"], 15_000);
    userns = info.ok && info.stdout.includes("name=userns");
    if (!userns) {
      missing.push(
        'docker runs containers as host root: enable "userns-remap" in its daemon.json, or use podman',
      );
    }
  }
  return { firewall, userns, missing };
}
