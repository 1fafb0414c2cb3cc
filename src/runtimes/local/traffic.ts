/**
 * What the apps router saw of each deployment's requests: when the last one arrived and how many
 * are in flight now. The reconciler reads `lastRequestAt` (UNUSED); scaling decisions may read
 * `inFlight`. Kept in memory: each Slipway process counts what its own router passes.
 */
export interface DeploymentTraffic {
  /** Epoch milliseconds of the last request routed to the deployment; undefined: none yet. */
  lastRequestAt: number | undefined;
  inFlight: number;
}

export class Traffic {
  private readonly byDeployment = new Map<string, DeploymentTraffic>();

  /** A request for `deploymentId` starts now; the returned function ends it (once). */
  begin(deploymentId: string, now = Date.now()): () => void {
    let entry = this.byDeployment.get(deploymentId);
    if (entry === undefined) {
      entry = { lastRequestAt: undefined, inFlight: 0 };
      this.byDeployment.set(deploymentId, entry);
    }
    entry.lastRequestAt = now;
    entry.inFlight++;
    const counted = entry;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      counted.inFlight--;
    };
  }

  of(deploymentId: string): DeploymentTraffic {
    const entry = this.byDeployment.get(deploymentId);
    return entry === undefined ? { lastRequestAt: undefined, inFlight: 0 } : { ...entry };
  }

  /** Forgets a deployment that is gone (teardown). */
  forget(deploymentId: string): void {
    this.byDeployment.delete(deploymentId);
  }
}
