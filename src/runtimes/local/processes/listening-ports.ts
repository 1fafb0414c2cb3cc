import { readdir, readFile, readlink } from "node:fs/promises";
import { endianness } from "node:os";

/**
 * Which TCP ports a process and its descendants listen on, from Linux's /proc: the socket inodes
 * among their open descriptors (/proc/<pid>/fd), matched against the LISTEN rows of the TCP tables
 * of their network namespaces (/proc/<pid>/net/tcp and tcp6). The host sees the pids of sandboxed
 * apps (bubblewrap's own pid namespace) and of containers, so this works for every launch.
 */

export interface ListeningSocket {
  /** The bound address as usually written: 0.0.0.0, 127.0.0.1, ::, ::1, ::ffff:127.0.0.1, … */
  address: string;
  port: number;
}

/** TCP_LISTEN in the `st` column of /proc/net/tcp. */
const LISTEN = "0A";

/** The kernel prints each 32-bit word of an address in the host's byte order. */
const littleEndian = endianness() === "LE";

function word(hex: string): number[] {
  const bytes = [0, 2, 4, 6].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
  return littleEndian ? bytes.reverse() : bytes;
}

/** An address of /proc/net/tcp (8 hex digits) or tcp6 (32), as text. */
export function decodeAddress(hex: string): string {
  if (hex.length === 8) return word(hex).join(".");
  const bytes: number[] = [];
  for (let i = 0; i < 32; i += 8) bytes.push(...word(hex.slice(i, i + 8)));
  const v4mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (v4mapped) return `::ffff:${bytes.slice(12).join(".")}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  // The longest run of two or more zero groups becomes "::" (RFC 5952).
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.len < 2) return groups.join(":");
  return `${groups.slice(0, best.at).join(":")}::${groups.slice(best.at + best.len).join(":")}`;
}

/** The LISTEN rows of one /proc/net/tcp or tcp6 table, by socket inode. */
export function parseTcpTable(text: string): Map<number, ListeningSocket> {
  const out = new Map<number, ListeningSocket>();
  for (const line of text.split("\n").slice(1)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
    const f = line.trim().split(/\s+/);
    const local = f[1];
    const inode = Number(f[9]);
    if (local === undefined || f[3] !== LISTEN || !Number.isInteger(inode) || inode <= 0) continue;
    const [addr, port] = local.split(":");
    if (addr === undefined || port === undefined || (addr.length !== 8 && addr.length !== 32)) continue;
    out.set(inode, { address: decodeAddress(addr), port: Number.parseInt(port, 16) });
  }
  return out;
}

/** `root` and every process descending from it (by parent pid), from one walk of /proc. */
export async function processTree(root: number): Promise<number[]> {
  const entries = await readdir("/proc");
  const children = new Map<number, number[]>();
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (entry) => {
        const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
        if (stat === "") return; // exited while we looked
        // Fields after the parenthesised command name (which may hold either): state ppid …
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        const list = children.get(ppid) ?? [];
        list.push(Number(entry));
        children.set(ppid, list);
      }),
  );
  const tree = new Set<number>();
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    if (tree.has(pid)) continue;
    tree.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return [...tree];
}

/** The socket inodes among the open descriptors of `pid`; undefined when they cannot be read. */
async function socketInodes(pid: number): Promise<number[] | undefined> {
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return undefined;
  }
  const links = await Promise.all(fds.map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => "")));
  return links.flatMap((l) => {
    const m = /^socket:\[(\d+)\]$/.exec(l);
    return m?.[1] === undefined ? [] : [Number(m[1])];
  });
}

/**
 * The TCP sockets that `root` and its descendants listen on, each once, sorted by port; undefined
 * when that cannot be known (no /proc, or the root process is gone or not ours to look at).
 */
export async function listeningSockets(root: number): Promise<ListeningSocket[] | undefined> {
  let tree: number[];
  try {
    tree = await processTree(root);
  } catch {
    return undefined;
  }
  const perPid = await Promise.all(tree.map(socketInodes));
  if (perPid[0] === undefined) return undefined;
  const inodes = new Set(perPid.flatMap((list) => list ?? []));
  if (inodes.size === 0) return [];
  // One read of the tables per network namespace among the tree (a container's is not the host's).
  const namespaces = new Map<string, number>();
  await Promise.all(
    tree.map(async (pid) => {
      const ns = await readlink(`/proc/${pid}/ns/net`).catch(() => undefined);
      if (ns !== undefined && !namespaces.has(ns)) namespaces.set(ns, pid);
    }),
  );
  const found = new Map<string, ListeningSocket>();
  for (const pid of namespaces.values()) {
    for (const table of ["tcp", "tcp6"]) {
      const text = await readFile(`/proc/${pid}/net/${table}`, "utf8").catch(() => "");
      for (const [inode, socket] of parseTcpTable(text)) {
        if (inodes.has(inode)) found.set(`${socket.address}|${socket.port}`, socket);
      }
    }
  }
  return [...found.values()].sort((a, b) => a.port - b.port || a.address.localeCompare(b.address));
}
