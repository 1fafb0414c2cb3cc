import { type ChildProcessByStdio, spawn } from "node:child_process";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { TestContext } from "node:test";
import type { RevisionSpec } from "../../src/runtimes/interface.ts";

/**
 * Starts container-host.ts (a Slipway stand-in that builds and activates `spec`) in its own
 * process and resolves once it says "ready"; the test kills it (SIGKILL) to leave its containers
 * behind, and it is killed at the test's end if still running.
 */
export async function startContainerHost(
  t: TestContext,
  dataDir: string,
  spec: RevisionSpec,
): Promise<ChildProcessByStdio<null, Readable, null>> {
  const host = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "container-host.ts"), dataDir, JSON.stringify(spec)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  t.after(() => {
    if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL");
  });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    host.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready\n")) resolve();
    });
    host.once("exit", (code) => reject(new Error(`the host exited with ${code}`)));
  });
  return host;
}
