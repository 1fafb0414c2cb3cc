import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { HaproxyApi } from "../../../../../src/runtimes/local/routing/haproxy/api.ts";
import {
  ADMIN_SOCKET,
  HOSTS_MAP,
  renderHaproxyConfig,
  renderHostsMap,
} from "../../../../../src/runtimes/local/routing/haproxy/config.ts";
import { HaproxyProcess } from "../../../../../src/runtimes/local/routing/haproxy/process.ts";
import {
  type LoggedRequest,
  parseRequestLine,
  RequestLog,
} from "../../../../../src/runtimes/local/routing/haproxy/request-log.ts";
import { cleanupTemp, tempDir, waitFor } from "../../../../helpers/local-runtime.ts";

/**
 * The front's request log with a real HAProxy: every request it proxied to an app is read once,
 * followed again, and after a reload (a new worker, a new ring).
 */

const HAPROXY = "/usr/sbin/haproxy";
const skip = existsSync(HAPROXY) || process.env.CI === "true" ? false : "no haproxy here (CI installs it)";

function get(port: number, path: string, host = "app.test"): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ port, path, host: "127.0.0.1", headers: { host } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the HAProxy front's request log", { skip }, () => {
  const dir = tempDir();
  const api = new HaproxyApi(join(dir, ADMIN_SOCKET));
  let app: Server;
  let haproxy: HaproxyProcess;
  let port = 0;
  let log: RequestLog;
  const seen: LoggedRequest[] = [];

  before(async () => {
    app = createServer((req, res) => {
      res.statusCode = req.url === "/missing" ? 404 : 200;
      res.end("ok");
    });
    await new Promise<void>((r) => app.listen(0, "127.0.0.1", r));
    const appPort = (app.address() as AddressInfo).port;
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    await writeFile(join(dir, HOSTS_MAP), renderHostsMap([["app.test", "s0"]]));
    haproxy = new HaproxyProcess(HAPROXY, dir, api, () => undefined);
    await haproxy.write(
      renderHaproxyConfig({
        dir,
        listen: { host: "127.0.0.1", port },
        edgePort: appPort,
        maxconn: 256,
        threads: "1",
        slots: [{ slot: "s0", servers: [{ name: "r1", address: `127.0.0.1:${appPort}`, drain: false }] }],
        hardStopAfterS: 5,
      }).replace("stats timeout 1d", "stats timeout 2s"),
    );
    await haproxy.start();
    log = new RequestLog(
      join(dir, ADMIN_SOCKET),
      () => api.workerPid(),
      (r) => seen.push(r),
    );
  });
  after(async () => {
    log.close();
    await haproxy.stop();
    await new Promise((r) => app.close(r));
    cleanupTemp();
  });

  it("reads every request once, from the worker's start, followed again and across a reload", async () => {
    // Requests before the reader follows are in the ring already: read from its beginning.
    for (let i = 0; i < 5; i++) assert.equal(await get(port, "/"), 200);
    await log.follow();
    await waitFor("the first five", () => seen.length === 5, 5000);
    assert.deepEqual(
      seen.map((r) => [r.slot, r.status]),
      Array.from({ length: 5 }, () => ["s0", 200]),
    );
    assert.equal(await get(port, "/missing"), 404);
    await waitFor("the 404", () => seen.length === 6, 5000);
    assert.equal(seen[5]?.status, 404);

    // Following the same worker again does not read its older lines twice (it starts at the
    // ring's end once HAProxy has read the command: requests sent before that are not read).
    await log.follow();
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 3; i++) await get(port, "/");
    await waitFor("three more", () => seen.length === 9, 5000);

    // A reload: a new worker with a new ring, followed from its beginning.
    await haproxy.reload();
    for (let i = 0; i < 4; i++) assert.equal(await get(port, "/"), 200);
    await log.follow();
    await waitFor("four after the reload", () => seen.length === 13, 5000);

    // Idle past the CLI's timeout (2 s here), the reader is dropped and follows again by itself.
    await new Promise((r) => setTimeout(r, 3000));
    for (let i = 0; i < 2; i++) assert.equal(await get(port, "/"), 200);
    await waitFor("two after the reader was dropped", () => seen.length === 15, 5000);

    // Requests the Node edge serves (the edge backend, or an unknown host) are not logged here.
    assert.equal(await get(port, "/", "nobody.test"), 200);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(seen.length, 15);
  });

  it("takes only lines of its own shape", () => {
    assert.deepEqual(parseRequestLine("s3 200 12"), { slot: "s3", status: 200, ms: 12 });
    assert.equal(parseRequestLine("s3 200"), undefined);
    assert.equal(parseRequestLine("<134>Nov 27 haproxy[1]: s3 200 12"), undefined);
    assert.equal(parseRequestLine("edge 200 12"), undefined);
  });
});
