/**
 * One deployment's traffic as the router sees it: requests in flight now, when the last one
 * started or ended, and the time-weighted average in flight between two reads (what the
 * autoscaler samples). Kept per deployment, not per revision, so a switch does not reset it.
 * Anything that needs "when was this app last used" (scale to zero, UNUSED) reads it here.
 */
export class Traffic {
  private count = 0;
  private external = 0;
  private last: number | undefined;
  /** ∫ in-flight dt since `since`, in request·ms. */
  private area = 0;
  private since: number;
  private changedAt: number;

  constructor(private readonly now: () => number = Date.now) {
    this.since = now();
    this.changedAt = this.since;
  }

  /** A request is being served (from routing to the end of its response). */
  begin(): void {
    this.account();
    this.count++;
    this.last = this.changedAt;
  }

  end(): void {
    this.account();
    this.count = Math.max(0, this.count - 1);
    this.last = this.changedAt;
  }

  /**
   * Requests in flight on another edge (the HAProxy front's statistics, read a few times a second):
   * they count as this edge's own until the next reading.
   */
  setExternal(count: number): void {
    this.account();
    this.external = count;
    if (count > 0) this.last = this.changedAt;
  }

  /** A request another edge served has ended (its request log). */
  touch(at: number): void {
    if (this.last === undefined || at > this.last) this.last = at;
  }

  get inflight(): number {
    return this.count + this.external;
  }

  /** When a request last started or ended (ms since the epoch); undefined when none ever came. */
  get lastRequestAt(): number | undefined {
    return this.last;
  }

  /** Average in flight since the previous call (or since creation), and starts a new period. */
  takeAverage(): number {
    this.account();
    const elapsed = this.changedAt - this.since;
    const average = elapsed > 0 ? this.area / elapsed : this.count + this.external;
    this.area = 0;
    this.since = this.changedAt;
    return average;
  }

  private account(): void {
    const now = this.now();
    this.area += (this.count + this.external) * (now - this.changedAt);
    this.changedAt = now;
  }
}
