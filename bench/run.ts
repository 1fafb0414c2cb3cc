import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hostSystem, probeBwrap } from "../src/runtimes/local/sandbox/sandbox.ts";
import { type Child, startChild } from "./children.ts";
import { coldStarts } from "./cold-start.ts";
import { dropDatabase, freshDatabase } from "./databases.ts";
import { deployTimes } from "./deploy-time.ts";
import { footprint, footprintTable } from "./footprint.ts";
import { combine, type LoadResult, load } from "./load.ts";

/**
 * `npm run bench`: Slipway against the limit — a bare Fastify route on this machine answering the
 * same bytes from memory — for list (20 a page), get, and a revision-creating PATCH, on PGlite and
 * on PostgreSQL with 10k deployments; on PostgreSQL also against the same list and get statements
 * behind bare routes (the database read's own ceiling); then start-up and idle memory, the time from
 * PATCH to DEPLOYED for a minimal app, cold and warm builds (warm-build.ts), and the cold start of
 * a min_scale 0 app (scaled to zero → first byte), and the apps edge beside nginx (edge.ts). `--scale` and `--side-by-side <checkout>` run the benches of scale.ts and
 * side-by-side.ts instead.
 */
if (process.argv.includes("--scale")) {
  const { scaleBench } = await import("./scale.ts");
  await scaleBench();
  process.exit(0);
}
if (process.argv.includes("--soak")) {
  const { soakBench } = await import("./soak.ts");
  await soakBench();
  process.exit(0);
}
if (process.argv.includes("--backup")) {
  const { backupPauseBench } = await import("./backup-pause.ts");
  await backupPauseBench();
  process.exit(0);
}
const sideBySideAt = process.argv.indexOf("--side-by-side");
if (sideBySideAt !== -1) {
  const other = process.argv[sideBySideAt + 1];
  if (other === undefined) throw new Error("--side-by-side needs the path of another checkout");
  const { sideBySide } = await import("./side-by-side.ts");
  await sideBySide(other);
  process.exit(0);
}

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);

interface SlipwayInfo {
  url: string;
  /** The same app with request logging on, as `npm start` runs it. */
  loggedUrl: string;
  key: string;
  getId: string;
  patchIds: string[];
  deployments: number;
  workspaceId: string;
}

interface Row {
  db: string;
  op: string;
  bare: LoadResult;
  slipway: LoadResult;
  /** The same statement behind a bare route (PostgreSQL only): the database read's own ceiling. */
  dbRead?: LoadResult;
}

async function postgresDatabase(): Promise<string | undefined> {
  try {
    return await freshDatabase("slipway_bench");
  } catch (err) {
    console.warn(`PostgreSQL unavailable (${(err as Error).message}); benchmarking PGlite only.`);
    return undefined;
  }
}

const PATCH_BODY = JSON.stringify({ source_revision_config: { image_uri: "registry.example/app:1.0.1" } });

async function sample(info: SlipwayInfo, path: string, method = "GET", body?: string): Promise<string> {
  const res = await fetch(`${info.url}${path}`, {
    method,
    headers: { "x-api-key": info.key, "content-type": "application/json" },
    body,
  });
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
  return res.text();
}

const slices = Math.max(1, Number(process.env.BENCH_SLICES ?? 4));

/**
 * Each of `urls` driven for `seconds` in all, in turns: a 1 s warm-up each, then `slices` slices
 * of seconds/slices, the order rotated every slice. The machine's speed drifts (other work on the
 * host); taking turns puts every side through the same drift, so their ratio stays fair.
 */
async function interleaved(
  urls: string[],
  run: (url: string, seconds: number) => Promise<LoadResult>,
): Promise<LoadResult[]> {
  for (const url of urls) await run(url, 1);
  const parts: LoadResult[][] = urls.map(() => []);
  for (let slice = 0; slice < slices; slice++) {
    for (let k = 0; k < urls.length; k++) {
      const i = (k + slice) % urls.length;
      parts[i]?.push(await run(urls[i] as string, seconds / slices));
    }
  }
  return parts.map(combine);
}

async function benchDatabase(label: string, databaseUrl: string): Promise<Row[]> {
  console.log(`\n[${label}] seeding and starting Slipway…`);
  const slipway: Child<SlipwayInfo> = await startChild("slipway-server.ts", { DATABASE_URL: databaseUrl });
  const info = slipway.info;
  console.log(`[${label}] ${info.deployments} deployments loaded`);
  const listPaths = Array.from({ length: 50 }, (_, i) => `/v2/deployments?limit=20&offset=${i * 20}`);
  const getPaths = [`/v2/deployments/${info.getId}`];
  const patchPaths = info.patchIds.map((id) => `/v2/deployments/${id}`);
  const bodies = {
    list: await sample(info, listPaths[0] as string),
    get: await sample(info, getPaths[0] as string),
    patch: await sample(info, patchPaths[0] as string, "PATCH", PATCH_BODY),
  };
  const bare: Child<{ url: string }> = await startChild("bare-server.ts", {}, JSON.stringify(bodies));
  // PGlite in memory lives inside the Slipway process: only a PostgreSQL database can be shared.
  const dbRead: Child<{ url: string }> | undefined =
    label === "PostgreSQL"
      ? await startChild("db-read-server.ts", { DATABASE_URL: databaseUrl }, info.workspaceId)
      : undefined;
  const headers = { "x-api-key": info.key, "content-type": "application/json" };
  const ops: [string, string[], "GET" | "PATCH", string][] = [
    ["list", listPaths, "GET", info.url],
    ["get", getPaths, "GET", info.url],
    ["patch (new revision)", patchPaths, "PATCH", info.url],
    ["list, logging on", listPaths, "GET", info.loggedUrl],
    ["get, logging on", getPaths, "GET", info.loggedUrl],
  ];
  const rows: Row[] = [];
  try {
    for (const [op, paths, method, slipwayUrl] of ops) {
      const body = method === "PATCH" ? PATCH_BODY : undefined;
      const urls = [bare.info.url, slipwayUrl];
      if (dbRead && method === "GET" && !op.includes("logging")) urls.push(dbRead.info.url);
      const [bareResult, slipResult, dbResult] = await interleaved(urls, (url, s) =>
        load({ url, method, headers, paths, body, seconds: s, connections }),
      );
      if (!bareResult || !slipResult) throw new Error(`${op}: no result`);
      if (slipResult.non2xx || slipResult.errors) {
        throw new Error(`${op}: ${slipResult.non2xx} non-2xx and ${slipResult.errors} errors from Slipway`);
      }
      rows.push({ db: label, op, bare: bareResult, slipway: slipResult, dbRead: dbResult });
      console.log(
        `[${label}] ${op}: ${Math.round(slipResult.rps)} req/s (limit ${Math.round(bareResult.rps)}` +
          `${dbResult ? `, one database read ${Math.round(dbResult.rps)}` : ""})`,
      );
    }
  } finally {
    await bare.stop();
    await dbRead?.stop();
    await slipway.stop();
  }
  return rows;
}

function table(rows: Row[]): string {
  const lines = [
    "| database | operation | Slipway req/s | p50 ms | p99 ms | limit req/s | limit p50 | limit p99 | ratio | one database read req/s | ratio to it |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.db} | ${r.op} | ${Math.round(r.slipway.rps)} | ${r.slipway.p50} | ${r.slipway.p99} | ` +
        `${Math.round(r.bare.rps)} | ${r.bare.p50} | ${r.bare.p99} | ${(r.slipway.rps / r.bare.rps).toFixed(2)}× | ` +
        `${r.dbRead ? Math.round(r.dbRead.rps) : "–"} | ${r.dbRead ? `${(r.slipway.rps / r.dbRead.rps).toFixed(2)}×` : "–"} |`,
    );
  }
  return lines.join("\n");
}

const results: Row[] = [];
results.push(...(await benchDatabase("PGlite", "memory://")));
const pgUrl = await postgresDatabase();
if (pgUrl) {
  try {
    results.push(...(await benchDatabase("PostgreSQL", pgUrl)));
  } finally {
    await dropDatabase("slipway_bench");
  }
}

console.log(`\n${connections} connections, ${seconds} s per run, 10k deployments\n`);
console.log(table(results));

if (process.env.BENCH_SKIP_FOOTPRINT !== "1") {
  // Idle memory and start-up of `slipway serve` as `npm start` runs it: first start on an empty
  // database, then a restart on the same one.
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-bench-footprint-"));
  const rows = [await footprint("PGlite", { SLIPWAY_DATA_DIR: dataDir })];
  const footprintPg = await postgresDatabase();
  try {
    if (footprintPg)
      rows.push(await footprint("PostgreSQL", { SLIPWAY_DATA_DIR: dataDir, DATABASE_URL: footprintPg }));
  } finally {
    if (footprintPg) await dropDatabase("slipway_bench");
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(
    `\nStart-up and idle memory of slipway serve (as npm start runs it)\n\n${footprintTable(rows)}`,
  );
}

if (process.env.BENCH_SKIP_DEPLOY !== "1") {
  const deploys = Number(process.env.BENCH_DEPLOYS ?? 5);
  // What the sandbox costs: every build step and app process in bubblewrap, and unsandboxed.
  // probeBwrap answers the reason it cannot run, or undefined when it works.
  const bwrapWorks = (await probeBwrap(hostSystem())) === undefined;
  for (const sandbox of bwrapWorks ? ["bwrap", "none"] : ["none"]) {
    const times = await deployTimes(deploys, { SLIPWAY_SANDBOX: sandbox });
    console.log(
      `\nPATCH → DEPLOYED (minimal app, local runtime, PGlite, SLIPWAY_SANDBOX=${sandbox}): ` +
        `median ${times.median} ms (runs: ${times.runs.join(", ")} ms)`,
    );
  }
}

if (process.env.BENCH_SKIP_WARM_BUILD !== "1") {
  // Builds that reuse the deployment's dependency cache (warm-build.ts): cold and warm, and their ratio.
  const { warmBuilds, warmLine } = await import("./warm-build.ts");
  for (const r of await warmBuilds(Number(process.env.BENCH_WARM_BUILDS ?? 3)))
    console.log(`\n${warmLine(r)}`);
  // A source's own Dockerfile rebuilt with its last layer changed (dockerfile-build.ts).
  const { dockerfileRebuilds, dockerfileLine } = await import("./dockerfile-build.ts");
  console.log(`\n${dockerfileLine(await dockerfileRebuilds(Number(process.env.BENCH_WARM_BUILDS ?? 3)))}`);
}

if (process.env.BENCH_SKIP_COLD_START !== "1") {
  const cold = await coldStarts(Number(process.env.BENCH_COLD_STARTS ?? 5));
  console.log(
    `\nCold start (min_scale 0, scaled to zero → first byte, local runtime, PGlite): ` +
      `median ${cold.median} ms (runs: ${cold.runs.join(", ")} ms)`,
  );
}

if (process.env.BENCH_SKIP_EDGE !== "1") {
  // The apps edge beside nginx in front of the same app (edge.ts).
  const { edgeVsNginx, edgeLines } = await import("./edge.ts");
  const rounds = Number(process.env.BENCH_EDGE_ROUNDS ?? 5);
  console.log(`\n${edgeLines(await edgeVsNginx(Number(process.env.BENCH_EDGE_SECONDS ?? 5), rounds))}`);
}
