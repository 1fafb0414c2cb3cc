/**
 * A tiny app (no dependencies) that tries, from inside its sandbox, what a tenant should not reach
 * on the network, and answers what happened (issue 26's network tests deploy it):
 * - GET /connect?targets=<json [{host, port}]>: a TCP connection to each ("connected" or the error);
 * - GET /pg?user=<role>&database=<db>: a PostgreSQL session through DATABASE_URI's host and port as
 *   that role into that database, and `SELECT current_user, current_database()` on success;
 * - GET /redis: AUTH and PING on its own Redis through REDIS_URI.
 * Anything else answers its name, so the edge can be checked. It only connects where it is told.
 */
export const SPY_APP_JS = `
const http = require("node:http");
const net = require("node:net");

function connect(host, port) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 3000 });
    s.on("connect", () => { s.destroy(); resolve("connected"); });
    s.on("timeout", () => { s.destroy(); resolve("timeout"); });
    s.on("error", (e) => resolve(e.code || String(e)));
  });
}

/** Reads whole PostgreSQL backend messages off a socket. */
function pgSession(host, port, user, database, password) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 5000 });
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (r) => { if (!done) { done = true; s.destroy(); resolve(r); } };
    const msg = (type, body) => {
      const head = Buffer.alloc(5);
      head.write(type, 0);
      head.writeInt32BE(body.length + 4, 1);
      return Buffer.concat([head, body]);
    };
    const cstr = (t) => Buffer.from(t + "\\0");
    s.on("connect", () => {
      const body = Buffer.concat([cstr("user"), cstr(user), cstr("database"), cstr(database), Buffer.from([0])]);
      const head = Buffer.alloc(8);
      head.writeInt32BE(body.length + 8, 0);
      head.writeInt32BE(196608, 4);
      s.write(Buffer.concat([head, body]));
    });
    s.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 5) {
        const type = String.fromCharCode(buf[0]);
        const len = buf.readInt32BE(1);
        if (buf.length < len + 1) return;
        const body = buf.subarray(5, len + 1);
        buf = buf.subarray(len + 1);
        if (type === "E") {
          const fields = {};
          for (const part of body.toString("utf8").split("\\0")) if (part) fields[part[0]] = part.slice(1);
          return finish({ ok: false, code: fields.C, message: fields.M });
        }
        if (type === "R") {
          const kind = body.readInt32BE(0);
          if (kind === 3) s.write(msg("p", cstr(password)));
          else if (kind !== 0) return finish({ ok: false, code: "auth " + kind });
        }
        if (type === "Z" && !s.queried) {
          s.queried = true;
          s.write(msg("Q", cstr("SELECT current_user, current_database()")));
        }
        if (type === "D") {
          const cols = [];
          let at = 2;
          for (let i = 0; i < body.readInt16BE(0); i++) {
            const n = body.readInt32BE(at);
            cols.push(body.subarray(at + 4, at + 4 + n).toString("utf8"));
            at += 4 + n;
          }
          return finish({ ok: true, user: cols[0], database: cols[1] });
        }
      }
    });
    s.on("timeout", () => finish({ ok: false, code: "timeout" }));
    s.on("error", (e) => finish({ ok: false, code: e.code || String(e) }));
    s.on("close", () => finish({ ok: false, code: "closed" }));
  });
}

function redisPing(uri) {
  const u = new URL(uri);
  return new Promise((resolve) => {
    const s = net.connect({ host: u.hostname, port: Number(u.port), timeout: 3000 });
    let out = "";
    s.on("connect", () => s.write("AUTH " + decodeURIComponent(u.password) + "\\r\\nPING\\r\\n"));
    s.on("data", (d) => {
      out += d;
      if (out.split("\\r\\n").length > 2) { s.destroy(); resolve(out.trim()); }
    });
    s.on("timeout", () => { s.destroy(); resolve("timeout"); });
    s.on("error", (e) => resolve(e.code || String(e)));
  });
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://app");
  let body;
  if (url.pathname === "/connect") {
    const targets = JSON.parse(url.searchParams.get("targets") || "[]");
    body = await Promise.all(targets.map(async (t) => ({ ...t, result: await connect(t.host, t.port) })));
  } else if (url.pathname === "/pg") {
    const db = new URL(process.env.DATABASE_URI);
    body = await pgSession(db.hostname, Number(db.port || 5432), url.searchParams.get("user"),
      url.searchParams.get("database"), decodeURIComponent(db.password));
  } else if (url.pathname === "/redis") {
    body = process.env.REDIS_URI ? await redisPing(process.env.REDIS_URI) : "no REDIS_URI";
  } else {
    const db = process.env.DATABASE_URI ? new URL(process.env.DATABASE_URI) : undefined;
    body = { spy: process.env.SPY_NAME, port: Number(process.env.PORT),
      database: db && { host: db.hostname, port: Number(db.port || 5432), user: decodeURIComponent(db.username), name: db.pathname.slice(1) } };
  }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(body));
});
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("spy listening"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
`;

export interface ConnectResult {
  host: string;
  port: number;
  label: string;
  result: string;
}

export interface PgResult {
  ok: boolean;
  user?: string;
  database?: string;
  code?: string;
  message?: string;
}

export interface SpyHome {
  spy: string;
  port: number;
  database?: { host: string; port: number; user: string; name: string };
}
