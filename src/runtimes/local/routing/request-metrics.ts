// Per-deployment request counters: the apps router records each request it proxied (latency,
// status) and each process restart, in one-minute buckets kept for 24 hours (the deployment's metrics
// route and the console's charts), and in totals since start (`/metrics` with
// SLIPWAY_METRICS_PER_DEPLOYMENT). In this process's memory: a server restart starts them over.
// Recording is a few array increments: it is on the edge's hot path.

export const BUCKET_MS = 60_000;
const KEEP_BUCKETS = 24 * 60;

/** Upper bounds of the latency histogram, in ms (the API's own histogram's, in seconds there). */
export const LATENCY_BOUNDS_MS = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000] as const;
/** Status classes, in the order of the counts arrays: 1xx … 5xx. */
export const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];

/** Requests by status class and by latency (one count per bound, then one above the last). */
interface Counts {
  classes: number[];
  latency: number[];
}

interface Bucket extends Counts {
  start: number;
  requests: number;
  errors: number;
  latencySumMs: number;
  latencyMaxMs: number;
  restarts: number;
}

/** What `/metrics` exposes of a deployment: counts since this process started. */
export interface EdgeTotals extends Counts {
  requests: number;
  latencySumMs: number;
}

const emptyCounts = (): Counts => ({
  classes: new Array<number>(STATUS_CLASSES.length).fill(0),
  latency: new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0),
});

/** The status class's and the latency bucket's indexes in `Counts`' arrays. */
function slots(latencyMs: number, status: number): [number, number] {
  const cls = Math.min(4, Math.max(0, Math.floor(status / 100) - 1));
  let i = 0;
  while (i < LATENCY_BOUNDS_MS.length && latencyMs > (LATENCY_BOUNDS_MS[i] ?? 0)) i++;
  return [cls, i];
}

function count(c: Counts, cls: number, latencySlot: number): void {
  c.classes[cls] = (c.classes[cls] ?? 0) + 1;
  c.latency[latencySlot] = (c.latency[latencySlot] ?? 0) + 1;
}

const totals = new Map<string, EdgeTotals>();

export interface TrafficPoint {
  /** Start of the minute, ISO 8601. */
  at: string;
  requests: number;
  /** Answers with status 500 or more (the app's, or the router's 502). */
  errors: number;
  latency_avg_ms: number | null;
  latency_max_ms: number | null;
  restarts: number;
  /** Requests by status class. */
  statuses: Record<StatusClass, number>;
}

/** Requests by latency over a window: `counts[i]` took at most `bounds_ms[i]` (and more than the one before); the last, more than every bound. */
export interface LatencyHistogram {
  bounds_ms: number[];
  counts: number[];
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
  const fresh = {
    start,
    requests: 0,
    errors: 0,
    latencySumMs: 0,
    latencyMaxMs: 0,
    restarts: 0,
    ...emptyCounts(),
  };
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
  const [cls, slot] = slots(latencyMs, status);
  count(b, cls, slot);
  let t = totals.get(name);
  if (!t) {
    t = { requests: 0, latencySumMs: 0, ...emptyCounts() };
    totals.set(name, t);
  }
  t.requests++;
  t.latencySumMs += latencyMs;
  count(t, cls, slot);
}

/** Every deployment's counts since this process started (read at a `/metrics` scrape). */
export function edgeTotals(): ReadonlyMap<string, EdgeTotals> {
  return totals;
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
      statuses: Object.fromEntries(STATUS_CLASSES.map((c, i) => [c, b?.classes[i] ?? 0])) as Record<
        StatusClass,
        number
      >,
    });
  }
  return points;
}

/** The latency histogram of the last `windowMs` (the minutes `trafficSeries` covers). */
export function latencyHistogram(name: string, windowMs: number, now = Date.now()): LatencyHistogram {
  const first = now - (now % BUCKET_MS) - windowMs + BUCKET_MS;
  const counts = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  for (const b of byDeployment.get(name) ?? []) {
    if (b.start < first) continue;
    b.latency.forEach((n, i) => {
      counts[i] = (counts[i] ?? 0) + n;
    });
  }
  return { bounds_ms: [...LATENCY_BOUNDS_MS], counts };
}
