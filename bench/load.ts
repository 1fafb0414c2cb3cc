import autocannon from "autocannon";

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export interface LoadSpec {
  url: string;
  method?: "GET" | "PATCH";
  headers?: Record<string, string>;
  /** Paths to cycle through (one per request), relative to `url`. */
  paths: string[];
  body?: string;
  seconds: number;
  connections: number;
}

/** Drives one endpoint with autocannon from this process (the servers run in their own processes). */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  let i = 0;
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.seconds,
    requests: [
      {
        method: spec.method ?? "GET",
        headers: spec.headers,
        body: spec.body,
        setupRequest: (req) => {
          const path = spec.paths[i++ % spec.paths.length] as string;
          return { ...req, path };
        },
      },
    ],
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/**
 * Equal-length runs of one endpoint as one: the mean rate, the median of their p50s, the worst of
 * their p99s, and every non-2xx answer and error.
 */
export function combine(parts: LoadResult[]): LoadResult {
  const sorted = parts.map((p) => p.p50).sort((a, b) => a - b);
  return {
    rps: parts.reduce((sum, p) => sum + p.rps, 0) / Math.max(1, parts.length),
    p50: sorted[Math.floor(sorted.length / 2)] ?? 0,
    p99: Math.max(0, ...parts.map((p) => p.p99)),
    non2xx: parts.reduce((sum, p) => sum + p.non2xx, 0),
    errors: parts.reduce((sum, p) => sum + p.errors, 0),
  };
}
