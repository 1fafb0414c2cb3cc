import { execFile } from "node:child_process";

export const KUBECTL = "/usr/bin/kubectl";

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real kubectl asynchronously (the stand-in serves it from this same process). */
export function kubectl(kubeconfig: string, args: string[], input?: string): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile(
      KUBECTL,
      ["--kubeconfig", kubeconfig, ...args],
      { timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}
