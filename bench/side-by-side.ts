import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Child, startChild } from "./children.ts";
import { dropDatabase, freshDatabase } from "./databases.ts";
import { load } from "./load.ts";

/**
 * `npm run bench -- --side-by-side <checkout>`: the revision-creating PATCH of this tree against
 * another checkout of Slipway (a `git worktree` of an older commit, with its own `npm ci`), on
 * PostgreSQL. Each side runs its own bench/slipway-server.ts on its own database, seeded alike;
 * the two are then driven in turn, SIDE_ROUNDS rounds of SIDE_SECONDS each after a warm-up, the
 * order swapped every round so that neither side always runs first. Reports the requests a second
 * of every round, their means and the ratio, and the CPU time a PATCH costs the server and
 * PostgreSQL (from /proc).
 */
interface Server {
  url: string;
  key: string;
  patchIds: string[];
}

const seconds = Number(process.env.SIDE_SECONDS ?? 6);
const rounds = Number(process.env.SIDE_ROUNDS ?? 4);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const BODY = JSON.stringify({ source_revision_config: { image_uri: "registry.example/app:1.0.1" } });

/** CPU milliseconds used so far by the processes `match` picks (user + system, from /proc). */
function cpuMs(match: (pid: number, cmdline: string) => boolean): number {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!match(Number(entry), readFileSync(`/proc/${entry}/cmdline`, "utf8"))) continue;
      const fields = readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended while it was read.
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

async function start(checkout: string, database: string): Promise<Child<Server>> {
  return startChild<Server>(
    join(checkout, "bench", "slipway-server.ts"),
    {
      DATABASE_URL: await freshDatabase(database),
      BENCH_DEPLOYMENTS: process.env.SIDE_DEPLOYMENTS ?? "2000",
    },
    undefined,
    checkout,
  );
}

export async function sideBySide(other: string): Promise<void> {
  const sides: [string, string][] = [
    ["other", resolve(other)],
    ["this", resolve(import.meta.dirname, "..")],
  ];
  const servers = new Map<string, Child<Server>>();
  try {
    for (const [label, checkout] of sides) servers.set(label, await start(checkout, `slipway_side_${label}`));
    const rps = new Map<string, number[]>(sides.map(([label]) => [label, []]));
    for (let round = 0; round <= rounds; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const [label] of order) {
        const server = servers.get(label);
        if (!server) continue;
        const spec = {
          url: server.info.url,
          method: "PATCH" as const,
          headers: { "x-api-key": server.info.key, "content-type": "application/json" },
          paths: server.info.patchIds.map((id) => `/v2/deployments/${id}`),
          body: BODY,
          connections,
        };
        // Round 0 warms both sides up (JIT, caches, connections) and is not counted.
        const pid = server.proc.pid;
        const before = { db: cpuMs((_p, c) => c.startsWith("postgres")), app: cpuMs((p) => p === pid) };
        const result = await load({ ...spec, seconds: round === 0 ? 2 : seconds });
        if (result.non2xx || result.errors)
          throw new Error(`${label}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        if (round === 0) continue;
        const n = result.rps * seconds;
        const db = (cpuMs((_p, c) => c.startsWith("postgres")) - before.db) / n;
        const app = (cpuMs((p) => p === pid) - before.app) / n;
        rps.get(label)?.push(result.rps);
        console.log(
          `round ${round} ${label}: ${Math.round(result.rps)} req/s (p50 ${result.p50} ms) · CPU a PATCH: ` +
            `server ${app.toFixed(2)} ms, PostgreSQL ${db.toFixed(2)} ms`,
        );
      }
    }
    const mean = (label: string) => {
      const xs = rps.get(label) ?? [];
      return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    };
    console.log(
      `\nPATCH (new revision), ${connections} connections, ${rounds} rounds of ${seconds} s: ` +
        `${other} ${Math.round(mean("other"))} req/s → this tree ${Math.round(mean("this"))} req/s ` +
        `(${(mean("this") / mean("other")).toFixed(2)}×)`,
    );
  } finally {
    for (const server of servers.values()) await server.stop();
    for (const [label] of sides) await dropDatabase(`slipway_side_${label}`);
  }
}
