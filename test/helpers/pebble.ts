import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../e2e/stack.ts";
import { eventually } from "./eventually.ts";

/**
 * Debian's Pebble (Let's Encrypt's ACME test server) on loopback, for the apps edge's HTTPS tests
 * (issue 30, "Real components"). Its API is served with a certificate made here (Debian ships
 * none), which `caFile` trusts; what it issues chains to its own root (`root()`). HTTP-01 goes to
 * `httpPort` of whatever name it resolves through `dnsServer` (pebble-challtestsrv).
 */
export interface Pebble {
  directoryUrl: string;
  /** PEM of the API's certificate: SLIPWAY_ACME_CA_FILE. */
  caFile: string;
  /** The root its certificates chain to (`/roots/0` on its management port), PEM. */
  root(): Promise<string>;
  stop(): Promise<void>;
}

export const PEBBLE = "/usr/bin/pebble";

/** GET over HTTPS trusting `ca`: Pebble's management API. */
function getText(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

export async function startPebble(o: {
  httpPort: number;
  dnsServer: string;
  /** Seconds a certificate lives (Pebble's certificateValidityPeriod); its default is 5 years. */
  validitySeconds?: number;
}): Promise<Pebble> {
  const dir = mkdtempSync(join(tmpdir(), "slipway-pebble-"));
  const certFile = join(dir, "api.crt");
  const keyFile = join(dir, "api.key");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "2",
      "-subj",
      "/CN=pebble.test",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
    ],
    { stdio: "ignore" },
  );
  const apiPort = await freePort();
  const mgmtPort = await freePort();
  const config = {
    pebble: {
      listenAddress: `127.0.0.1:${apiPort}`,
      managementListenAddress: `127.0.0.1:${mgmtPort}`,
      certificate: certFile,
      privateKey: keyFile,
      httpPort: o.httpPort,
      tlsPort: await freePort(),
      ocspResponderURL: "",
      externalAccountBindingRequired: false,
      ...(o.validitySeconds === undefined ? {} : { certificateValidityPeriod: o.validitySeconds }),
    },
  };
  const configFile = join(dir, "pebble.json");
  writeFileSync(configFile, JSON.stringify(config));
  const output: string[] = [];
  const child: ChildProcess = spawn(PEBBLE, ["-config", configFile, "-dnsserver", o.dnsServer], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0", PEBBLE_AUTHZREUSE: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (c: Buffer) => output.push(c.toString()));
  child.stderr?.on("data", (c: Buffer) => output.push(c.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ca = readFileSync(certFile, "utf8");
  const directoryUrl = `https://127.0.0.1:${apiPort}/dir`;
  try {
    await eventually(
      "pebble to answer",
      async () => (await getText(directoryUrl, ca).catch(() => ({ status: 0 }))).status === 200,
      20_000,
    );
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${(err as Error).message}; pebble said: ${output.join("").slice(-2000)}`);
  }
  return {
    directoryUrl,
    caFile: certFile,
    root: async () => (await getText(`https://127.0.0.1:${mgmtPort}/roots/0`, ca)).body,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
