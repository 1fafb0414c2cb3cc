import { spawn } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./process.ts";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `slipway` bin (bin/slipway.mjs) as a child process and collects its output. */
export function runCli(args: string[], env: Record<string, string>, cwd = REPO_ROOT): Promise<CliResult> {
  const proc = spawn(process.execPath, [join(REPO_ROOT, "bin", "slipway.mjs"), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: env.HOME ?? "/nonexistent", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (c: Buffer) => {
    stdout += c.toString("utf8");
  });
  proc.stderr.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  return new Promise((resolve) => proc.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** A directory holding a dependency-free HTTP app and its slipway.json. */
export const APP_FILES = (version: string): Record<string, string> => ({
  "server.js": `const http = require("node:http");
http.createServer((req, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ version: ${JSON.stringify(version)}, greeting: process.env.GREETING ?? null }));
}).listen(Number(process.env.PORT), "127.0.0.1");
`,
  "slipway.json": JSON.stringify({ start: "node server.js", healthcheck: "/" }),
});
