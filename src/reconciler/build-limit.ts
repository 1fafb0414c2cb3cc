import { BuildError, type PhaseContext, type RevisionSpec, type Runtime } from "../runtimes/interface.ts";

/** The reason a build past SLIPWAY_BUILD_TIMEOUT_S fails with. */
export function buildTimedOut(limitMs: number): BuildError {
  const s = Math.max(1, Math.round(limitMs / 1000));
  return new BuildError(`the build took longer than ${s} s (SLIPWAY_BUILD_TIMEOUT_S)`);
}

/**
 * Runs a revision's build phase under the time limit: past it the phase's signal is aborted with
 * the timeout as reason, so the runtime kills the build's process group, and the build fails
 * (BuildError → BUILD_FAILED) with the reason. Aborts of the caller's signal (interrupt, shutdown)
 * pass through as they are. The limit counts the build alone: a wait for a build slot happens
 * before the claim (claims.ts), fetching the source before this phase.
 */
export async function buildWithin(
  runtime: Runtime,
  spec: RevisionSpec,
  ctx: PhaseContext,
  limitMs: number,
  onTimeout: (err: BuildError) => void = () => {},
): Promise<void> {
  const timer = new AbortController();
  const timeout = buildTimedOut(limitMs);
  const t = setTimeout(() => {
    onTimeout(timeout);
    timer.abort(timeout);
  }, limitMs);
  const over = () => timer.signal.aborted && !ctx.signal.aborted;
  try {
    await runtime.build(spec, { ...ctx, signal: AbortSignal.any([ctx.signal, timer.signal]) });
  } catch (err) {
    if (over()) throw timeout;
    throw err;
  } finally {
    clearTimeout(t);
  }
  // A runtime that does not stop on abort still took too long.
  if (over()) throw timeout;
}
