import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { connect, createServer, type Server } from "node:net";
import { endianness } from "node:os";
import { after, describe, it } from "node:test";
import {
  decodeAddress,
  listeningSockets,
  parseTcpTable,
  processTree,
} from "../../../../src/runtimes/local/processes/listening-ports.ts";

/** Real sockets of this process and of children it starts, read back from /proc. */

const linux = process.platform === "linux" ? false : "reads Linux's /proc";
const le = endianness() === "LE" ? false : "the literal rows below are a little-endian kernel's";

async function listen(host: string, port = 0): Promise<Server> {
  const server = createServer();
  server.listen({ host, port, exclusive: true });
  await once(server, "listening");
  return server;
}

function portOf(server: Server): number {
  const a = server.address();
  return typeof a === "object" && a !== null ? a.port : 0;
}

/** Whether this machine can bind ::1 (IPv6 may be off in a container). */
async function hasIpv6(): Promise<boolean> {
  try {
    const s = await listen("::1");
    s.close();
    return true;
  } catch {
    return false;
  }
}

/**
 * `sh` that starts a node child listening on `port` at `host` and stays its parent: the listening
 * socket belongs to a grandchild of the test, not to the process spawned.
 */
function shellWithListener(host: string, port: number): ChildProcess {
  const js = `require("node:net").createServer().listen(${port}, ${JSON.stringify(host)}, () => console.log("up"))`;
  // Its own process group, so the end of the test reaches the node child too.
  return spawn("sh", ["-c", `node -e '${js}'; echo after`], {
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
}

describe("listening ports from /proc", { skip: linux }, () => {
  const children: ChildProcess[] = [];
  const servers: Server[] = [];
  after(() => {
    for (const c of children) if (c.pid !== undefined) process.kill(-c.pid, "SIGKILL");
    for (const s of servers) s.close();
  });

  it("finds this process's listening IPv4 socket with its address, and not its connected ones", async () => {
    const server = await listen("127.0.0.1");
    servers.push(server);
    const port = portOf(server);
    const client = connect(port, "127.0.0.1");
    await once(client, "connect");
    const sockets = await listeningSockets(process.pid);
    const local = client.localPort;
    client.destroy();
    assert.ok(sockets);
    assert.deepEqual(
      sockets.filter((s) => s.port === port),
      [{ address: "127.0.0.1", port }],
      "the listener once, the client's and the accepted socket not at all",
    );
    assert.ok(local !== undefined && !sockets.some((s) => s.port === local));
  });

  it("a closed server is no longer listed", async () => {
    const server = await listen("127.0.0.1");
    const port = portOf(server);
    assert.ok((await listeningSockets(process.pid))?.some((s) => s.port === port));
    await new Promise((r) => server.close(r));
    assert.ok(!(await listeningSockets(process.pid))?.some((s) => s.port === port));
  });

  it("finds IPv6 and wildcard listeners as their addresses", async (t) => {
    const wildcard = await listen("0.0.0.0");
    servers.push(wildcard);
    const found = await listeningSockets(process.pid);
    assert.ok(found?.some((s) => s.address === "0.0.0.0" && s.port === portOf(wildcard)));
    if (!(await hasIpv6())) {
      t.skip("no IPv6 on this machine");
      return;
    }
    const v6 = await listen("::1");
    const any = await listen("::");
    servers.push(v6, any);
    const sockets = await listeningSockets(process.pid);
    assert.ok(sockets?.some((s) => s.address === "::1" && s.port === portOf(v6)));
    assert.ok(sockets?.some((s) => s.address === "::" && s.port === portOf(any)));
  });

  it("finds the socket of a grandchild (a shell's node) from the shell's pid, and not from a sibling's", async () => {
    const probe = await listen("127.0.0.1");
    const port = portOf(probe);
    await new Promise((r) => probe.close(r));
    const shell = shellWithListener("127.0.0.1", port);
    children.push(shell);
    const sibling = spawn("sleep", ["30"], { stdio: "ignore", detached: true });
    children.push(sibling);
    assert.ok(shell.stdout);
    await once(shell.stdout, "data");
    const pid = shell.pid ?? 0;
    const tree = await processTree(pid);
    assert.equal(tree[0], pid);
    assert.equal(tree.length, 2, `sh and node: ${tree.join(",")}`);
    assert.ok(!tree.includes(sibling.pid ?? 0));
    assert.deepEqual(await listeningSockets(pid), [{ address: "127.0.0.1", port }]);
    assert.deepEqual(await listeningSockets(sibling.pid ?? 0), [], "a process that listens on nothing");
    assert.ok(
      (await listeningSockets(process.pid))?.some((s) => s.port === port),
      "the test process is the shell's ancestor: its tree holds the socket too",
    );
  });

  it("a process that does not exist is undefined, not an empty list", async () => {
    const gone = spawn("true");
    await once(gone, "exit");
    assert.equal(await listeningSockets(gone.pid ?? 0), undefined);
  });
});

describe("parsing /proc/net/tcp and tcp6", { skip: le }, () => {
  const HEADER =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

  it("keeps LISTEN rows by inode with decoded addresses; other states and bad rows are left out", () => {
    const text =
      HEADER +
      "   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000 100 0 0 10 0\n" +
      "   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000 100 0 0 10 0\n" +
      "   2: 0100007F:0BB8 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4244 1 0000 20 4 30 10 -1\n" +
      "   3: 0100007F:0BB9 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 0 1 0000 100 0 0 10 0\n" +
      "   garbage\n";
    assert.deepEqual(
      [...parseTcpTable(text)],
      [
        [4242, { address: "127.0.0.1", port: 3000 }],
        [4243, { address: "0.0.0.0", port: 8080 }],
      ],
    );
  });

  it("decodes IPv6 rows: ::1, ::, v4-mapped and a full address", () => {
    const text =
      HEADER +
      "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 11 1\n" +
      "   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 12 1\n" +
      "   2: 0000000000000000FFFF00000100007F:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 13 1\n";
    assert.deepEqual(
      [...parseTcpTable(text).values()],
      [
        { address: "::1", port: 8080 },
        { address: "::", port: 80 },
        { address: "::ffff:127.0.0.1", port: 443 },
      ],
    );
    assert.equal(decodeAddress("B80D0120000000000000000001000000"), "2001:db8::1");
    assert.equal(decodeAddress("B80D0120010000000200000003000000"), "2001:db8:0:1:0:2:0:3");
    assert.equal(decodeAddress("0100000A"), "10.0.0.1");
  });
});
