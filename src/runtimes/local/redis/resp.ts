import { connect } from "node:net";

/**
 * Just enough of Redis's protocol (RESP2) for the runtime to talk to a deployment's own Redis:
 * authenticate, check it answers, change a setting. Not a general client; apps bring their own.
 */

export type RespValue = string | number | null | RespValue[] | Error;

function encode(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}

/** Parses one reply at `at`; undefined when the buffer does not hold all of it yet. */
function parse(buf: Buffer, at: number): { value: RespValue; next: number } | undefined {
  const end = buf.indexOf("\r\n", at);
  if (end < 0) return undefined;
  const type = String.fromCharCode(buf[at] ?? 0);
  const line = buf.toString("utf8", at + 1, end);
  const next = end + 2;
  if (type === "+") return { value: line, next };
  if (type === "-") return { value: new Error(line), next };
  if (type === ":") return { value: Number(line), next };
  if (type === "$") {
    const n = Number(line);
    if (n < 0) return { value: null, next };
    if (buf.length < next + n + 2) return undefined;
    return { value: buf.toString("utf8", next, next + n), next: next + n + 2 };
  }
  if (type === "*") {
    const n = Number(line);
    if (n < 0) return { value: null, next };
    const items: RespValue[] = [];
    let pos = next;
    for (let i = 0; i < n; i++) {
      const item = parse(buf, pos);
      if (item === undefined) return undefined;
      items.push(item.value);
      pos = item.next;
    }
    return { value: items, next: pos };
  }
  throw new Error(`unexpected reply from Redis: ${JSON.stringify(buf.toString("utf8", at, end))}`);
}

/**
 * Sends `commands` on one connection to 127.0.0.1:`port` after `AUTH password`, and resolves with
 * their replies (an error reply is an Error value; a refused AUTH rejects). `timeoutMs` bounds it all.
 */
export function redisCommands(
  port: number,
  password: string,
  commands: readonly (readonly string[])[],
  timeoutMs = 2000,
  /** Where the server listens as Slipway reaches it: its deployment's namespace address, if any. */
  host = "127.0.0.1",
): Promise<RespValue[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    let buf = Buffer.alloc(0);
    const replies: RespValue[] = [];
    const want = commands.length + 1;
    const finish = (err: Error | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(replies.slice(1));
    };
    const timer = setTimeout(() => finish(new Error("Redis did not answer in time")), timeoutMs);
    socket.once("error", (err) => finish(err));
    socket.once("close", () => finish(new Error("Redis closed the connection")));
    socket.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      let pos = 0;
      try {
        for (let r = parse(buf, pos); r !== undefined; r = parse(buf, pos)) {
          replies.push(r.value);
          pos = r.next;
          const auth = replies[0];
          if (auth instanceof Error) return finish(new Error(`Redis refused AUTH: ${auth.message}`));
          if (replies.length === want) return finish(undefined);
        }
      } catch (err) {
        return finish(err as Error);
      }
      buf = buf.subarray(pos);
    });
    socket.write(encode(["AUTH", password]) + commands.map(encode).join(""));
  });
}
