// Per-deployment request counters for the console's charts: the apps router records each request it
// proxied (latency, status) and each process restart, in one-minute buckets kept for 24 hours, in
// this process's memory (a server restart starts the charts over).

export const BUCKET_MS = 60_000;
const KEEP_BUCKETS = 24 * 60;

interface Bucket {
  start: number;
  requests: number;
  errors: number;
  latencySumMs: number;
  latencyMaxMs: number;
  restarts: number;
}

export interface TrafficPoint {
  /** Start of the minute, ISO 8601. */
  at: string;
  requests: number;
  /** Answers with status 500 or more (the app's, or the router's 502). */
  errors: number;
  latency_avg_ms: number | null;
  latency_max_ms: number | null;
  restarts: number;
}

const byDeployment = new Map<string, Bucket[]>();

function bucketOf(name: string, now: number): Bucket {
  const start = now - (now % BUCKET_MS);
  let list = byDeployment.get(name);
  if (!list) {
    list = [];
    byDeployment.set(name, list);
  }
  const last = list.at(-1);
  if (last && last.start === start) return last;
  const fresh = { start, requests: 0, errors: 0, latencySumMs: 0, latencyMaxMs: 0, restarts: 0 };
  list.push(fresh);
  if (list.length > KEEP_BUCKETS) list.splice(0, list.length - KEEP_BUCKETS);
  return fresh;
}

/** One request the router proxied for deployment `name`. */
export function recordRequest(name: string, latencyMs: number, status: number, now = Date.now()): void {
  const b = bucketOf(name, now);
  b.requests++;
  if (status >= 500) b.errors++;
  b.latencySumMs += latencyMs;
  b.latencyMaxMs = Math.max(b.latencyMaxMs, latencyMs);
}

/** A process of deployment `name` crashed and is being restarted. */
export function recordRestart(name: string, now = Date.now()): void {
  bucketOf(name, now).restarts++;
}

/** Every minute of the last `windowMs` (empty minutes as zeros), oldest first. */
export function trafficSeries(name: string, windowMs: number, now = Date.now()): TrafficPoint[] {
  const end = now - (now % BUCKET_MS);
  const first = end - windowMs + BUCKET_MS;
  const stored = new Map((byDeployment.get(name) ?? []).map((b) => [b.start, b]));
  const points: TrafficPoint[] = [];
  for (let t = first; t <= end; t += BUCKET_MS) {
    const b = stored.get(t);
    points.push({
      at: new Date(t).toISOString(),
      requests: b?.requests ?? 0,
      errors: b?.errors ?? 0,
      latency_avg_ms: b?.requests ? Math.round((b.latencySumMs / b.requests) * 10) / 10 : null,
      latency_max_ms: b?.requests ? Math.round(b.latencyMaxMs * 10) / 10 : null,
      restarts: b?.restarts ?? 0,
    });
  }
  return points;
}
