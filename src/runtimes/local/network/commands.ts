import { execFile } from "node:child_process";

/** The PATH `ip`, `nft` and `nsenter` are looked up in (never the server's own PATH). */
const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** A network command that failed: its argv and what it printed. */
export class NetworkCommandError extends Error {}

/** Runs `file args` (stdin `input`), resolving to its stdout; rejects with its stderr. */
export function run(file: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { timeout: 20_000, env: { PATH: SYSTEM_PATH, LANG: "C" }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err === null) return resolve(String(stdout));
        const why = String(stderr).trim() || err.message;
        reject(new NetworkCommandError(`${file} ${args.join(" ")}: ${why.split("\n")[0]}`));
      },
    );
    child.stdin?.on("error", () => {});
    child.stdin?.end(input ?? "");
  });
}
