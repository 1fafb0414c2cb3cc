import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../e2e/stack.ts";

/** Debian's Docker distribution registry (package docker-registry; `.ci/run` installs it). */
export const REGISTRY_BIN = "/usr/bin/docker-registry";

export interface TestRegistry {
  /** host:port, as SLIPWAY_REGISTRY_URL takes it (plain http: SLIPWAY_REGISTRY_INSECURE=true). */
  address: string;
  /** The tags of a repository (`<workspace>/<name>`), from `/v2/<repo>/tags/list`; [] when none. */
  tags(repository: string, auth?: string): Promise<string[]>;
  /** Everything the registry printed. */
  output(): string;
  stop(): Promise<void>;
}

/** Extra config of the registry (its `auth:` section, for token auth), as YAML lines. */
export interface RegistryOptions {
  authYaml?: string;
}

/** Starts a registry on a free loopback port, its storage in a temp dir; resolves when it answers. */
export async function startRegistry(opts: RegistryOptions = {}): Promise<TestRegistry> {
  const dir = mkdtempSync(join(tmpdir(), "slipway-registry-"));
  const port = await freePort();
  const config = join(dir, "config.yml");
  writeFileSync(
    config,
    [
      "version: 0.1",
      "log:",
      "  level: warn",
      "storage:",
      "  filesystem:",
      `    rootdirectory: ${join(dir, "data")}`,
      "  delete:",
      "    enabled: true",
      "http:",
      `  addr: 127.0.0.1:${port}`,
      ...(opts.authYaml ? [opts.authYaml] : []),
      "",
    ].join("\n"),
  );
  const proc: ChildProcess = spawn(REGISTRY_BIN, ["serve", config], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout?.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  proc.stderr?.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const address = `127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) {
      await stop();
      throw new Error(`docker-registry exited at start:\n${out}`);
    }
    const ok = await fetch(`http://${address}/v2/`)
      .then((r) => r.status === 200 || r.status === 401)
      .catch(() => false);
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`docker-registry did not answer on ${address}:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    address,
    output: () => out,
    stop,
    async tags(repository, auth) {
      const res = await fetch(`http://${address}/v2/${repository}/tags/list`, {
        headers: auth ? { authorization: auth } : {},
      });
      if (res.status === 404) return [];
      if (res.status !== 200)
        throw new Error(`tags/list of ${repository}: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { tags?: string[] | null };
      return body.tags ?? [];
    },
  };
}
