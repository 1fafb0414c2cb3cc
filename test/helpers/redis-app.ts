/**
 * A test app that uses its deployment's Redis through REDIS_URI with a Redis client of its own (a
 * few lines of RESP over node:net, so the app needs no npm install). Every answer is JSON:
 *   GET /push?value=v   RPUSH jobs v, then LRANGE jobs 0 -1 read back on the same connection
 *   GET /jobs           LRANGE jobs 0 -1
 *   GET /uri            whether REDIS_URI is set (never its value)
 *   GET /health, other  {"ok": true}
 */
export const REDIS_APP_JS = `
const http = require("node:http");
const net = require("node:net");

function encode(args) {
  return "*" + args.length + "\\r\\n" + args.map((a) => "$" + Buffer.byteLength(a) + "\\r\\n" + a + "\\r\\n").join("");
}
function parse(buf, at) {
  const end = buf.indexOf("\\r\\n", at);
  if (end < 0) return undefined;
  const type = String.fromCharCode(buf[at]);
  const line = buf.toString("utf8", at + 1, end);
  const next = end + 2;
  if (type === "+") return { value: line, next };
  if (type === "-") return { value: { error: line }, next };
  if (type === ":") return { value: Number(line), next };
  if (type === "$") {
    const n = Number(line);
    if (n < 0) return { value: null, next };
    if (buf.length < next + n + 2) return undefined;
    return { value: buf.toString("utf8", next, next + n), next: next + n + 2 };
  }
  if (type === "*") {
    const n = Number(line);
    const items = [];
    let pos = next;
    for (let i = 0; i < n; i++) {
      const item = parse(buf, pos);
      if (item === undefined) return undefined;
      items.push(item.value);
      pos = item.next;
    }
    return { value: items, next: pos };
  }
  throw new Error("bad reply");
}
/** Runs commands on one connection to REDIS_URI (AUTH first); resolves with their replies. */
function redis(commands) {
  const u = new URL(process.env.REDIS_URI);
  const password = decodeURIComponent(u.password);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname);
    let buf = Buffer.alloc(0);
    const replies = [];
    socket.on("error", reject);
    socket.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let pos = 0;
      for (let r = parse(buf, pos); r !== undefined; r = parse(buf, pos)) {
        replies.push(r.value);
        pos = r.next;
      }
      buf = buf.subarray(pos);
      pos = 0;
      if (replies.length === commands.length + 1) {
        socket.end();
        resolve(replies.slice(1));
      }
    });
    socket.write(encode(["AUTH", password]) + commands.map(encode).join(""));
  });
}
const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://app");
  const send = (body) => { res.setHeader("content-type", "application/json"); res.end(JSON.stringify(body)); };
  try {
    if (url.pathname === "/push") {
      const [pushed, jobs] = await redis([["RPUSH", "jobs", url.searchParams.get("value") || ""], ["LRANGE", "jobs", "0", "-1"]]);
      return send({ pushed, jobs });
    }
    if (url.pathname === "/jobs") {
      const [jobs] = await redis([["LRANGE", "jobs", "0", "-1"]]);
      return send({ jobs });
    }
    if (url.pathname === "/uri") return send({ set: typeof process.env.REDIS_URI === "string" });
    send({ ok: true });
  } catch (err) {
    res.statusCode = 500;
    send({ error: String(err) });
  }
});
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("listening on " + process.env.PORT));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
`;
