import { request } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { PortCheck } from "./port-check.ts";

/** One GET: the status, or a short reason when nothing answered. */
export function probe(
  port: number,
  path: string,
  timeoutMs: number,
  host = "127.0.0.1",
): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host, port, path, method: "GET", agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(new Error("no answer in time")));
    req.on("error", (err: NodeJS.ErrnoException) =>
      resolve(err.code === "ECONNREFUSED" ? "connection refused" : err.message),
    );
    req.end();
  });
}

export interface HealthWait {
  /** Where the app is reached: 127.0.0.1, or its namespace's address. */
  host?: string;
  port: number;
  path: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Set once the process has exited; the wait stops with that description. */
  exited: () => string | undefined;
  /** What the app listens on meanwhile: a wrong port fails sooner, and the reasons name $PORT. */
  ports?: PortCheck;
}

export type HealthResult = { ok: true } | { ok: false; reason: string };

/**
 * The first pause between probes; it grows by half each time, up to EARLY_MAX_PAUSE_MS for the
 * first EARLY_MS (a refused connection costs next to nothing, and a probe that comes 100 ms after
 * the app is up adds 100 ms to the deploy), then up to MAX_PAUSE_MS.
 */
const FIRST_PAUSE_MS = 3;
const EARLY_MAX_PAUSE_MS = 15;
const EARLY_MS = 3000;
const MAX_PAUSE_MS = 100;

/**
 * Polls until GET `path` answers with a status below 500, the process exits, it turns out to
 * listen elsewhere (`ports`), time runs out or abort. The first probe goes out at once and the pauses start at a few ms: a small app answers
 * within a few dozen ms of its start, and every ms of waiting here is deploy time.
 */
export async function waitHealthy(w: HealthWait): Promise<HealthResult> {
  const started = Date.now();
  const deadline = started + w.timeoutMs;
  let last = "no answer yet";
  /** Whether anything answered on the port (then it listens there, and the path is what fails). */
  let answered = false;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    if (w.signal.aborted) return { ok: false, reason: "interrupted" };
    const exit = w.exited();
    if (exit !== undefined) return { ok: false, reason: exit };
    const left = deadline - Date.now();
    if (left <= 0) {
      const listening = answered ? undefined : await w.ports?.timedOut(w.timeoutMs);
      return {
        ok: false,
        reason:
          listening ??
          `did not answer GET ${w.path} with a status below 500 within ${w.timeoutMs} ms (last: ${last})`,
      };
    }
    const result = await probe(w.port, w.path, Math.max(50, Math.min(2000, left)), w.host);
    if (typeof result === "number" && result < 500) return { ok: true };
    answered ||= typeof result === "number";
    last = typeof result === "number" ? `status ${result}` : result;
    const wrong = answered ? undefined : w.ports?.verdict();
    if (wrong !== undefined) return { ok: false, reason: wrong };
    await sleep(Math.min(pause, Math.max(0, deadline - Date.now())));
    const cap = Date.now() - started < EARLY_MS ? EARLY_MAX_PAUSE_MS : MAX_PAUSE_MS;
    pause = Math.min(cap, Math.ceil(pause * 1.5));
  }
}
