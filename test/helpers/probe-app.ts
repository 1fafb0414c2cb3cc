/**
 * A tiny app (no dependencies) that tries to see what it should not and answers what happened:
 * GET /probe?paths=<json list>&pids=<json list> answers JSON with its uid, what it could write, the
 * processes it sees, and for every path and pid whether reading it worked (and what it read).
 * The runtime's and the end-to-end sandbox tests deploy it.
 */
export const PROBE_APP_JS = `
const http = require("node:http");
const fs = require("node:fs");
const attempt = (f) => {
  try {
    const v = f();
    return { ok: true, value: typeof v === "string" ? v.slice(0, 300) : v };
  } catch (e) {
    return { ok: false, error: e.code || String(e) };
  }
};
const read = (p) => (fs.statSync(p).isDirectory() ? fs.readdirSync(p).join(",") : fs.readFileSync(p, "utf8"));
const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://app");
  const paths = JSON.parse(url.searchParams.get("paths") || "[]");
  const pids = JSON.parse(url.searchParams.get("pids") || "[]");
  const visible = fs.readdirSync("/proc").filter((n) => /^\\d+$/.test(n));
  const body = {
    status: fs.readFileSync("/proc/self/status", "utf8").split("\\n").filter((l) => /^(Uid|Gid|NSpid):/.test(l)),
    pid: process.pid,
    cwd: process.cwd(),
    home: process.env.HOME,
    envNames: Object.keys(process.env).sort(),
    writeApp: attempt(() => fs.writeFileSync("written-by-app.txt", "x")),
    writeTmp: attempt(() => fs.writeFileSync("/tmp/written-by-app.txt", "x")),
    writeHome: attempt(() => fs.writeFileSync(process.env.HOME + "/written-by-app.txt", "x")),
    processes: Object.fromEntries(visible.map((p) => [p, attempt(() => fs.readFileSync("/proc/" + p + "/cmdline", "utf8").split("\\0").join(" "))])),
    environs: Object.fromEntries(visible.filter((p) => Number(p) !== process.pid).map((p) => [p, attempt(() => fs.readFileSync("/proc/" + p + "/environ", "utf8"))])),
    reads: Object.fromEntries(paths.map((p) => [p, attempt(() => read(p))])),
    pidEnvirons: Object.fromEntries(pids.map((p) => [p, attempt(() => fs.readFileSync("/proc/" + p + "/environ", "utf8"))])),
    kills: Object.fromEntries(pids.map((p) => [p, attempt(() => process.kill(Number(p), 0))])),
  };
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(body));
});
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("probe listening in " + process.cwd()));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
`;

export interface Attempt {
  ok: boolean;
  value?: string;
  error?: string;
}

export interface ProbeAnswer {
  status: string[];
  pid: number;
  cwd: string;
  home: string;
  envNames: string[];
  writeApp: Attempt;
  writeTmp: Attempt;
  writeHome: Attempt;
  processes: Record<string, Attempt>;
  environs: Record<string, Attempt>;
  reads: Record<string, Attempt>;
  pidEnvirons: Record<string, Attempt>;
  kills: Record<string, Attempt>;
}

/** The probe's query string for `paths` and `pids`. */
export function probeQuery(paths: string[], pids: number[] = []): string {
  return `/probe?paths=${encodeURIComponent(JSON.stringify(paths))}&pids=${encodeURIComponent(JSON.stringify(pids))}`;
}
