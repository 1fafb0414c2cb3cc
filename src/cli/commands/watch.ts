// Following a revision to its end on the command line: each status with its elapsed time, the
// build log, a spinner on a terminal; then the URL, or why it failed, the end of the log of the
// step that failed and the command that shows the rest (exit 1).
import type { Deployment } from "../../sdk/client.ts";
import type { DeployEvent } from "../../sdk/deploy.ts";
import {
  failedStep,
  failureReason,
  followRevision,
  logTail,
  type RevisionOutcome,
} from "../../sdk/follow.ts";
import type { Context } from "../context.ts";
import { EXIT, ExitCode } from "../output.ts";

const TAIL = 20;

const elapsed = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)}s`;

/** Prints what a deploy or a revision follow reports; `phase` is what the spinner shows meanwhile. */
export class Progress {
  readonly started = Date.now();
  phase = "";
  constructor(private readonly ctx: Context) {
    ctx.out.spin(() => `${this.phase} ${elapsed(this.started)}`);
  }

  onEvent = (e: DeployEvent): void => {
    const { out } = this.ctx;
    if (e.type === "status") {
      this.phase = e.status;
      out.event({
        event: "status",
        revision_id: e.revision.id,
        status: e.status,
        elapsed_s: (Date.now() - this.started) / 1000,
      });
      out.line(`${e.status.padEnd(16)} ${elapsed(this.started)}`);
    } else if (e.type === "log") {
      out.event({ event: "log", stream: e.stream, at: e.at, line: e.line });
      out.line(`  │ ${e.line}`);
    }
  };

  stop(): void {
    this.ctx.out.stopSpinner();
  }
}

/**
 * Runs `fn` with a signal that Ctrl-C aborts; an interrupted wait says the revision goes on and
 * how to look at it, then exits 130. The SIGINT handler is removed however `fn` ends.
 */
export async function interruptible<T>(
  ctx: Context,
  hint: () => string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once("SIGINT", onSigint);
  try {
    return await fn(abort.signal);
  } catch (err) {
    if (!abort.signal.aborted) throw err;
    ctx.out.stopSpinner();
    ctx.out.note(`Stopped waiting; the revision goes on. ${hint()}`);
    throw new ExitCode(EXIT.interrupted);
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** Prints the end of a wait: the URL, or the failure and the log that explains it (then exit 1). */
export async function report(ctx: Context, dep: Deployment, outcome: RevisionOutcome, started: number) {
  const { out } = ctx;
  const { revision: rev, url } = outcome;
  const reason = failureReason(rev);
  const step = outcome.ok ? null : failedStep(rev);
  const tail = step ? await logTail(ctx.client(), dep.id, rev.id, step, TAIL).catch(() => []) : [];
  const next = outcome.ok
    ? null
    : step
      ? `slipway logs ${dep.name} --revision ${rev.number}${step === "build" ? " --build" : ""}`
      : `slipway status ${dep.name}`;
  out.event({
    event: "result",
    deployment_id: dep.id,
    revision_id: rev.id,
    revision_number: rev.number,
    status: rev.status,
    status_message: reason,
    url,
    ...(outcome.ok ? {} : { failed_step: step, log_tail: tail.map((l) => l.line), next }),
  });
  if (outcome.ok) {
    out.line(`Deployed ${dep.name} in ${elapsed(started)}: ${url ?? "(no URL)"}`);
    return;
  }
  if (!out.json) {
    out.note(reason ? `${rev.status}: ${reason}` : rev.status, rev.status);
    if (step && tail.length)
      out.note(
        `Last lines of the ${step} log of revision #${rev.number}:\n${tail.map((l) => `  │ ${l.line}`).join("\n")}`,
      );
    else if (step) out.note(`The ${step} log of revision #${rev.number} is empty.`);
    out.note(`Next: ${next}`);
  }
  throw new ExitCode(EXIT.deploymentFailed);
}

/** Waits for the revision (rollback), printing as it goes; exits 1 when it fails. */
export async function watchRevision(ctx: Context, dep: Deployment, revisionId: string): Promise<void> {
  const progress = new Progress(ctx);
  progress.phase = "QUEUED";
  try {
    const outcome = await interruptible(
      ctx,
      () => `See: slipway status ${dep.name}`,
      (signal) => followRevision(ctx.client(), dep.id, revisionId, { signal, onEvent: progress.onEvent }),
    );
    progress.stop();
    await report(ctx, outcome.deployment, outcome, progress.started);
  } finally {
    progress.stop();
  }
}
