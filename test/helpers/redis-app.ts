/**
 * Test apps that use their deployment's Redis through REDIS_URI with a Redis client of their own (a
 * few lines of RESP over node:net, so the apps need no npm install). The web app answers JSON:
 *   GET /push?value=v   RPUSH jobs v, then LRANGE jobs 0 -1 read back on the same connection
 *   GET /jobs           LRANGE jobs 0 -1
 *   POST /jobs?value=v  LPUSH queue {"id", "value"} for the queue worker; answers 202 {"id"}
 *   GET /jobs/<id>      the worker's result of job <id> (GET result:<id>), 404 until there is one
 *   GET /uri            whether REDIS_URI is set (never its value)
 *   GET /health, other  {"ok": true}
 * The queue worker (REDIS_WORKER_JS) takes jobs with BRPOP queue and SETs result:<id> to
 * {"value": <value upper-cased>, "worker": true}.
 */
/** RESP encode and parse, and `redis(commands)`: one connection to REDIS_URI, AUTH first. */
const REDIS_CLIENT_JS = `
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
`;

export const REDIS_APP_JS = `
const http = require("node:http");
${REDIS_CLIENT_JS}
const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://app");
  const send = (body) => { res.setHeader("content-type", "application/json"); res.end(JSON.stringify(body)); };
  try {
    if (url.pathname === "/push") {
      const [pushed, jobs] = await redis([["RPUSH", "jobs", url.searchParams.get("value") || ""], ["LRANGE", "jobs", "0", "-1"]]);
      return send({ pushed, jobs });
    }
    if (url.pathname === "/jobs" && req.method === "POST") {
      const id = require("node:crypto").randomUUID();
      await redis([["LPUSH", "queue", JSON.stringify({ id, value: url.searchParams.get("value") || "" })]]);
      res.statusCode = 202;
      return send({ id });
    }
    if (url.pathname.startsWith("/jobs/")) {
      const [result] = await redis([["GET", "result:" + url.pathname.slice("/jobs/".length)]]);
      if (result === null) res.statusCode = 404;
      return send(result === null ? { error: "no result yet" } : JSON.parse(result));
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

export const REDIS_WORKER_JS = `
${REDIS_CLIENT_JS}
let stopping = false;
process.on("SIGTERM", () => { stopping = true; setTimeout(() => process.exit(0), 100); });
async function work() {
  while (!stopping) {
    try {
      const [taken] = await redis([["BRPOP", "queue", "1"]]);
      if (!Array.isArray(taken) || taken.length < 2) continue; // timed out: nothing queued
      const job = JSON.parse(taken[1]);
      await redis([["SET", "result:" + job.id, JSON.stringify({ value: String(job.value).toUpperCase(), worker: true })]]);
      console.log("worker: done " + job.id);
    } catch (err) {
      console.error("worker: " + err);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
work();
`;
