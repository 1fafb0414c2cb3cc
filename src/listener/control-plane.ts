// The listener's only connection: outbound HTTP to the control plane (long-polled desired state,
// status reports). See docs/kubernetes.md for the protocol.
import type { DeploymentPodsReport, DesiredState, RevisionReport } from "../protocol/listener.ts";

export class ControlPlaneError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface ControlPlaneOptions {
  url: string;
  apiKey: string;
  listenerId: string;
}

export class ControlPlane {
  constructor(private readonly o: ControlPlaneOptions) {}

  private endpoint(path: string): string {
    return `${this.o.url.replace(/\/$/, "")}/v2/listeners/${encodeURIComponent(this.o.listenerId)}/${path}`;
  }

  /** `timeoutMs`: no call waits longer (a long poll: its wait and a margin). */
  private async request(
    path: string,
    init: RequestInit,
    signal?: AbortSignal,
    timeoutMs = 30_000,
  ): Promise<Response> {
    let res: Response;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      res = await fetch(this.endpoint(path), {
        ...init,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        headers: { ...(init.headers ?? {}), authorization: `Bearer ${this.o.apiKey}` },
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new ControlPlaneError(
        `control plane unreachable: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      throw new ControlPlaneError(
        `${init.method ?? "GET"} ${path} answered ${res.status}: ${text.slice(0, 500)}`,
        res.status,
      );
    }
    return res;
  }

  /** Long poll: answers at once when the version is past `after`, else when it changes or `wait` ends. */
  async desired(after: number, waitSeconds: number, signal?: AbortSignal): Promise<DesiredState> {
    const res = await this.request(
      `desired?after=${after}&wait=${waitSeconds}`,
      { method: "GET" },
      signal,
      (waitSeconds + 30) * 1000,
    );
    const body = (await res.json()) as Partial<DesiredState>;
    if (typeof body.version !== "number" || !Array.isArray(body.deployments)) {
      throw new ControlPlaneError("desired state answer is not {version, deployments}");
    }
    // A server older than `namespaces` sends none: prune only where deployments are.
    const namespaces = Array.isArray(body.namespaces)
      ? body.namespaces.filter((ns) => typeof ns === "string")
      : [];
    return { ...(body as DesiredState), namespaces };
  }

  /** Reports revision states and changed pods; an empty list is a heartbeat. */
  async report(revisions: RevisionReport[], deployments?: DeploymentPodsReport[]): Promise<void> {
    const res = await this.request("status", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(deployments ? { revisions, deployments } : { revisions }),
    });
    await res.arrayBuffer();
  }
}
