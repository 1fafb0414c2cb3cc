import { performance } from "node:perf_hooks";

export interface PatchToDeployedOptions {
  /** Base URL of a running Slipway (with its base path), e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  apiKey: string;
  deploymentId: string;
  /** A revision-creating PATCH body, e.g. `{ source_revision_config: { repo_ref: "main" } }`. */
  body: unknown;
  timeoutMs?: number;
  /** How often the revision is read while waiting. */
  pollMs?: number;
}

export interface PatchToDeployedResult {
  revisionId: string;
  status: string;
  /** From sending the PATCH to reading DEPLOYED (or the failure). */
  ms: number;
}

const FINAL = /^(DEPLOYED|.*_FAILED|SKIPPED|INTERRUPTED)$/;

/**
 * For the benchmark: sends a revision-creating PATCH over HTTP, as a client would, and polls the
 * new revision until it is terminal. Measures what a CI script waits for.
 */
export async function patchToDeployed(opts: PatchToDeployedOptions): Promise<PatchToDeployedResult> {
  const headers = { "x-api-key": opts.apiKey, "content-type": "application/json" };
  const base = `${opts.baseUrl.replace(/\/+$/, "")}/v2/deployments/${opts.deploymentId}`;
  const started = performance.now();
  const patched = await fetch(base, { method: "PATCH", headers, body: JSON.stringify(opts.body) });
  if (!patched.ok) throw new Error(`PATCH answered ${patched.status}: ${await patched.text()}`);
  const revisionId = ((await patched.json()) as { latest_revision_id: string | null }).latest_revision_id;
  if (!revisionId) throw new Error("the PATCH created no revision");
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    const res = await fetch(`${base}/revisions/${revisionId}`, { headers });
    if (!res.ok) throw new Error(`GET revision answered ${res.status}`);
    const { status } = (await res.json()) as { status: string };
    if (FINAL.test(status)) return { revisionId, status, ms: performance.now() - started };
    if (Date.now() > deadline) throw new Error(`revision ${revisionId} still ${status} after the timeout`);
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 10));
  }
}
