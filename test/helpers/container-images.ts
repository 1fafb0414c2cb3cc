import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Engine, execEngine } from "../../src/runtimes/engine/engine.ts";
import { EngineFinder } from "../../src/runtimes/engine/finder.ts";
import {
  DEPLOYMENT_LABEL,
  OWNER_LABEL,
  REVISION_LABEL,
} from "../../src/runtimes/local/containers/container.ts";

/**
 * Images for container tests, built on this machine without a registry: a base image imported from
 * a tarball holding busybox (static), and app images built FROM it that serve a page with
 * `busybox httpd` on $PORT. /cgi-bin/env prints the environment; /cgi-bin/greeting answers JSON.
 */

const BUSYBOX = "/usr/bin/busybox";
const APPLETS = ["sh", "httpd", "env", "cat", "sleep", "printf", "echo", "kill", "ls"];

/**
 * The engine the tests use, or undefined (the suite then skips). In CI (`CI=true`) an unusable
 * engine is an error: the container tests must run there, not skip.
 */
export async function testEngine(): Promise<Engine | undefined> {
  const dir = mkdtempSync(join(tmpdir(), "slipway-engine-"));
  // Holds the containers.conf every engine command of the tests reads: kept until the very end.
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  const engine = await new EngineFinder(dir).usable();
  let busybox = true;
  try {
    execFileSync(BUSYBOX, ["true"]);
  } catch {
    busybox = false;
  }
  if ((engine === undefined || !busybox) && process.env.CI === "true") {
    throw new Error("CI=true: podman (with runc) or docker, and busybox-static, must be usable here");
  }
  return busybox ? engine : undefined;
}

export interface AppImage {
  /** Served at / (index.html): what the client loop reads as the version. */
  version: string;
  /** org.opencontainers.image.version, when set. */
  label?: string;
  /** The command the image runs (default: httpd on $PORT). */
  cmd?: string;
}

function must(ok: boolean, what: string, stderr: string): void {
  if (!ok) throw new Error(`${what} failed: ${stderr}`);
}

export class TestImages {
  readonly prefix = `localhost/slipway-test-${process.pid}-${randomBytes(3).toString("hex")}`;
  private readonly made: string[] = [];
  private base: string | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), "slipway-images-"));

  constructor(readonly engine: Engine) {}

  /** The busybox base image, imported once. */
  async baseImage(): Promise<string> {
    if (this.base !== undefined) return this.base;
    const root = join(this.dir, "rootfs");
    mkdirSync(join(root, "bin"), { recursive: true });
    mkdirSync(join(root, "www"), { recursive: true });
    copyFileSync(BUSYBOX, join(root, "bin", "busybox"));
    chmodSync(join(root, "bin", "busybox"), 0o755);
    for (const applet of APPLETS) symlinkSync("busybox", join(root, "bin", applet));
    const tarball = join(this.dir, "rootfs.tar");
    execFileSync("tar", ["-C", root, "-cf", tarball, "."]);
    const name = `${this.prefix}-base:1`;
    const r = await execEngine(this.engine, ["import", tarball, name]);
    must(r.ok, `${this.engine.name} import`, r.stderr);
    this.made.push(name);
    this.base = name;
    return name;
  }

  /** Builds `<prefix>-<name>:<tag>` from the base image and returns its reference. */
  async build(name: string, tag: string, app: AppImage): Promise<string> {
    const base = await this.baseImage();
    const ctx = join(this.dir, `${name}-${tag}`);
    mkdirSync(join(ctx, "www", "cgi-bin"), { recursive: true });
    writeFileSync(join(ctx, "www", "index.html"), JSON.stringify({ version: app.version }));
    // CGI headers end in CRLF: busybox passes them on as written, and Node's parser wants CR.
    const header = (type: string) => `printf 'Content-Type: ${type}\\r\\n\\r\\n'`;
    writeFileSync(join(ctx, "www", "cgi-bin", "env"), `#!/bin/sh\n${header("text/plain")}\nenv\n`);
    writeFileSync(
      join(ctx, "www", "cgi-bin", "greeting"),
      `#!/bin/sh\n${header("application/json")}\nprintf '{"version":"%s","greeting":"%s"}' ${JSON.stringify(app.version)} "$GREETING"\n`,
    );
    chmodSync(join(ctx, "www", "cgi-bin", "env"), 0o755);
    chmodSync(join(ctx, "www", "cgi-bin", "greeting"), 0o755);
    const cmd = app.cmd ?? 'exec /bin/httpd -f -p "$PORT" -h /www';
    const lines = [
      `FROM ${base}`,
      "COPY www /www",
      ...(app.label === undefined
        ? []
        : [`LABEL org.opencontainers.image.version=${JSON.stringify(app.label)}`]),
      `CMD ["/bin/sh", "-c", ${JSON.stringify(cmd)}]`,
    ];
    writeFileSync(join(ctx, "Containerfile"), `${lines.join("\n")}\n`);
    const ref = `${this.prefix}-${name}:${tag}`;
    const r = await execEngine(this.engine, [
      "build",
      "-q",
      "-t",
      ref,
      "-f",
      join(ctx, "Containerfile"),
      ctx,
    ]);
    must(r.ok, `${this.engine.name} build`, r.stderr);
    this.made.push(ref);
    return ref;
  }

  /** Names of this Slipway data dir's containers, optionally of one deployment. */
  async containers(owner: string, deploymentId?: string): Promise<string[]> {
    const args = ["ps", "--all", "--format", "{{.Names}}", "--filter", `label=${OWNER_LABEL}=${owner}`];
    if (deploymentId !== undefined) args.push("--filter", `label=${DEPLOYMENT_LABEL}=${deploymentId}`);
    const r = await execEngine(this.engine, args);
    must(r.ok, `${this.engine.name} ps`, r.stderr);
    return r.stdout.split("\n").filter(Boolean).sort();
  }

  /** Removes every container a test left with the owner label, and every image made here. */
  async cleanup(owners: string[] = []): Promise<void> {
    for (const owner of owners) {
      const r = await execEngine(this.engine, [
        "ps",
        "--all",
        "--quiet",
        "--filter",
        `label=${OWNER_LABEL}=${owner}`,
      ]);
      const ids = r.stdout.split(/\s+/).filter(Boolean);
      if (ids.length > 0) await execEngine(this.engine, ["rm", "--force", ...ids]);
    }
    if (this.made.length > 0) await execEngine(this.engine, ["rmi", "--force", ...this.made.reverse()]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export { DEPLOYMENT_LABEL, OWNER_LABEL, REVISION_LABEL };
