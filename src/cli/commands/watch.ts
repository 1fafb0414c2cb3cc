// Following a revision to its end: status transitions with elapsed time, the build log, the result.
import type { Deployment, Slipway } from "../../sdk/client.ts";
import { followLogs, isFailedStatus, waitForRevision } from "../../sdk/revisions.ts";
import type { Context } from "../context.ts";
import { EXIT, ExitCode } from "../output.ts";

const TAIL = 20;

function elapsed(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)}s`;
}

/** Waits for the revision, printing as it goes; exits 1 when it fails. Returns its final status. */
export async function watchRevision(ctx: Context, dep: Deployment, revisionId: string): Promise<string> {
  const client: Slipway = ctx.client();
  const { out } = ctx;
  const started = Date.now();
  const abort = new AbortController();
  const tail: string[] = [];
  let current = "QUEUED";
  const spinner = setInterval(() => out.spin(`${current} ${elapsed(started)}`), 250);
  const logs = (async () => {
    for await (const l of followLogs(client, dep.id, revisionId, { type: "build", signal: abort.signal })) {
      tail.push(l.line);
      if (tail.length > TAIL) tail.shift();
      out.event({ event: "log", stream: "build", at: l.at, line: l.line });
      out.line(`  │ ${l.line}`);
    }
  })().catch(() => undefined);
  try {
    const rev = await waitForRevision(client, dep.id, revisionId, {
      intervalMs: 500,
      onStatus: (status) => {
        current = status;
        out.event({
          event: "status",
          revision_id: revisionId,
          status,
          elapsed_s: (Date.now() - started) / 1000,
        });
        out.line(`${status.padEnd(16)} ${elapsed(started)}`);
      },
    });
    // The build stream ends by itself once the revision is terminal: let it print its last lines.
    await Promise.race([logs, new Promise((r) => setTimeout(r, 3000))]);
    abort.abort();
    clearInterval(spinner);
    out.stopSpinner();
    const after = await client.raw<Deployment>("GET", `/v2/deployments/${dep.id}`);
    const url = after.source_config.custom_url ?? null;
    out.event({
      event: "result",
      deployment_id: dep.id,
      revision_id: revisionId,
      status: rev.status,
      status_message: rev.status_message,
      url,
    });
    if (isFailedStatus(rev.status)) {
      if (!out.json) {
        process.stderr.write(`${rev.status_message ?? rev.status}\n`);
        if (tail.length)
          process.stderr.write(`Last lines of the build log:\n${tail.map((l) => `  ${l}`).join("\n")}\n`);
      }
      throw new ExitCode(EXIT.deploymentFailed);
    }
    out.line(`Deployed ${dep.name} in ${elapsed(started)}: ${url ?? "(no URL)"}`);
    return rev.status;
  } finally {
    clearInterval(spinner);
    abort.abort();
    out.stopSpinner();
  }
}
