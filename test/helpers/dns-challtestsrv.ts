import { type ChildProcess, spawn } from "node:child_process";
import { freePort } from "../e2e/stack.ts";
import { eventually } from "./eventually.ts";

/**
 * Debian's `pebble-challtestsrv` as a real DNS server on loopback (issue 30): TXT records set and
 * cleared over its management HTTP API. HTTP-01 and TLS ports are turned off so that they take no
 * port another suite (or Pebble) wants.
 */
export interface DnsServer {
  /** `127.0.0.1:<port>`, for SLIPWAY_DNS_RESOLVER. */
  address: string;
  setTxt(name: string, value: string): Promise<void>;
  clearTxt(name: string): Promise<void>;
  stop(): Promise<void>;
}

export const CHALLTESTSRV = "/usr/bin/pebble-challtestsrv";

/** `noIpv6`: AAAA queries get no answer, so that Pebble's HTTP-01 goes to 127.0.0.1 only. */
export async function startDnsServer(o: { noIpv6?: boolean } = {}): Promise<DnsServer> {
  const dnsPort = await freePort();
  const mgmtPort = await freePort();
  const child: ChildProcess = spawn(
    CHALLTESTSRV,
    [
      "-dns01",
      `127.0.0.1:${dnsPort}`,
      "-management",
      `127.0.0.1:${mgmtPort}`,
      "-http01",
      "",
      "-https01",
      "",
      "-tlsalpn01",
      "",
      ...(o.noIpv6 === true ? ["-defaultIPv6", ""] : []),
    ],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const mgmt = `http://127.0.0.1:${mgmtPort}`;
  const post = async (path: string, body: object) => {
    const res = await fetch(`${mgmt}${path}`, { method: "POST", body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`challtestsrv ${path}: ${res.status} ${await res.text()}`);
  };
  const fqdn = (name: string) => (name.endsWith(".") ? name : `${name}.`);
  await eventually(
    "pebble-challtestsrv to answer",
    () => post("/clear-txt", { host: "ready.test." }).then(() => true),
    20_000,
  );
  return {
    address: `127.0.0.1:${dnsPort}`,
    setTxt: (name, value) => post("/set-txt", { host: fqdn(name), value }),
    clearTxt: (name) => post("/clear-txt", { host: fqdn(name) }),
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
