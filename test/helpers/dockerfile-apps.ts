import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { workspaceStorage } from "../../src/runtimes/build/build-stores.ts";
import { type Engine, execEngine } from "../../src/runtimes/engine/engine.ts";
import { tempDir, writeApp } from "./local-runtime.ts";

/** Sources with their own Dockerfile, and workspace stores seeded with their base image. */

function must(r: { ok: boolean; stderr: string }, what: string): void {
  if (!r.ok) throw new Error(`${what} failed: ${r.stderr}`);
}

/** A Dockerfile app: busybox httpd on $PORT, its page written by a RUN that reads a build arg. */
export function dockerfileApp(
  base: string,
  opts: { run?: string; config?: Record<string, unknown>; args?: string[] } = {},
): string {
  const dir = writeApp(tempDir(), {
    config: opts.config ?? {},
    extra: {
      Dockerfile: [
        `FROM ${base}`,
        "ARG GREETING=none",
        ...(opts.args ?? []).map((name) => `ARG ${name}`),
        'RUN echo "built with $GREETING" > /www/index.html',
        ...(opts.run === undefined ? [] : [`RUN ${opts.run}`]),
        "COPY env.cgi /www/cgi-bin/env",
        'CMD ["/bin/sh", "-c", "exec /bin/httpd -f -p \\"$PORT\\" -h /www"]',
        "",
      ].join("\n"),
      "env.cgi": "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nenv\n",
    },
  });
  chmodSync(join(dir, "env.cgi"), 0o755);
  return dir;
}

/** The base image into a workspace's own store, as a pull from a registry would put it there. */
export async function seedWorkspaceStore(
  engine: Engine,
  dataDir: string,
  workspace: string,
  base: string,
): Promise<void> {
  const s = workspaceStorage(dataDir, workspace);
  const archive = join(tempDir(), "base.tar");
  must(await execEngine(engine, ["save", "--output", archive, base]), "podman save");
  must(
    await execEngine(engine, ["--root", s.root, "--runroot", s.runroot, "load", "--input", archive]),
    "podman load",
  );
}

/**
 * Empties and removes the workspaces' stores. Never `podman system reset`: even with --root it
 * removes every podman network on the machine, other suites' deployment networks included.
 */
export async function resetWorkspaceStores(engine: Engine, dataDir: string, workspaces: string[]) {
  for (const workspace of workspaces) {
    const s = workspaceStorage(dataDir, workspace);
    if (!existsSync(s.root)) continue;
    await execEngine(engine, ["--root", s.root, "--runroot", s.runroot, "rmi", "--all", "--force"]);
    // The overlay driver leaves its home bind-mounted onto itself after podman exits.
    const mounts = readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((l) => l.split(" ")[4] ?? "")
      .filter((m) => m === s.root || m.startsWith(`${s.root}/`))
      .reverse();
    for (const m of mounts) spawnSync("umount", ["--lazy", m]);
    rmSync(s.root, { recursive: true, force: true });
    rmSync(s.runroot, { recursive: true, force: true });
  }
}
