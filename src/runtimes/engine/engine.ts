import { execFile } from "node:child_process";

/** The engine CLI as Slipway runs it: its name and the only environment it gets. */
export interface Engine {
  name: "podman" | "docker";
  env: Record<string, string>;
  /** What keeps its containers apart here (isolation.ts); found with the engine. */
  isolation?: EngineIsolation;
}

/** What an engine can apply on this machine; found once with the engine (finder.ts). */
export interface EngineIsolation {
  /** nftables rules on the deployment's bridge can be installed (root, and `nft` works). */
  firewall: boolean;
  /** Containers run in user namespaces of their own (podman `--userns=auto`, or docker's userns-remap). */
  userns: boolean;
  /** Why something above is off, and how to fix it; empty when all is on. */
  missing: string[];
}

export interface ExecResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/** Runs one engine command to completion (no shell); never throws. */
export function execEngine(engine: Engine, args: string[], timeoutMs = 120_000): Promise<ExecResult> {
  return new Promise((done) => {
    execFile(
      engine.name,
      args,
      { env: engine.env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => done({ ok: err === null, stdout: String(stdout), stderr: String(stderr) }),
    );
  });
}

/** The last non-empty line an engine printed on stderr: its error message, for log lines. */
export function lastLine(text: string): string {
  const lines = text.split("\n").map((l) => l.trim());
  return lines.filter(Boolean).at(-1) ?? "no message";
}
