import { rehostCustomUrl } from "../../core/deployments/runtime-store.ts";
import { DOMAINS_CHANNEL } from "../../db/channels.ts";
import { type Database, inTransaction } from "../../db/client.ts";
import { checkTxt, txtResolver } from "./dns-check.ts";
import { recordName } from "./service.ts";
import { claimDueChecks, markFailedCheck, markVerified } from "./store.ts";

/**
 * Re-checks pending custom domains' TXT records with back-off (docs/domains.md, "Verification").
 * Every server runs one; claims (store.ts) keep two from checking one domain at once.
 */

export interface CheckerOptions {
  dnsResolver: string | undefined;
  /** First pause after a failed check, doubled per failure up to MAX_BACKOFF_MS. */
  checkEveryMs: number;
  appsDomain: string;
  logger: { warn(obj: object, msg: string): void };
}

const MAX_BACKOFF_MS = 3_600_000;
/** How long a claimed check may take before another server may take it. */
const LEASE_MS = 60_000;
const BATCH = 20;

export const backoffMs = (base: number, failedChecks: number) =>
  Math.min(MAX_BACKOFF_MS, base * 2 ** Math.min(failedChecks, 20));

export class DomainChecker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly db: Pick<Database, "orm" | "notify">,
    private readonly opts: CheckerOptions,
  ) {}

  start(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    // A pending domain is due checkEveryMs after a failure at the soonest: ticking at that pace (at
    // most every 5 s) finds due ones in time without asking the database more than needed.
    this.timer = setTimeout(
      () => {
        this.running = this.tick()
          .catch((err: unknown) => this.opts.logger.warn({ err }, "custom domain checks failed"))
          .finally(() => this.schedule());
      },
      Math.min(this.opts.checkEveryMs, 5000),
    );
    this.timer.unref();
  }

  /** Checks every due domain once. */
  async tick(): Promise<void> {
    const due = await claimDueChecks(this.db.orm, BATCH, LEASE_MS);
    if (due.length === 0) return;
    const resolver = txtResolver(this.opts.dnsResolver);
    for (const d of due) {
      if (this.stopped) return;
      const result = await checkTxt(resolver, recordName(d.hostname), d.token);
      if (!result.ok) {
        await markFailedCheck(
          this.db.orm,
          d.id,
          result.reason,
          backoffMs(this.opts.checkEveryMs, d.failed_checks),
        );
        continue;
      }
      const verified = await inTransaction(this.db.orm, async (tx) => {
        const done = await markVerified(tx, d.id);
        if (done) await rehostCustomUrl(tx, d.deployment_id, this.opts.appsDomain);
        return done;
      });
      if (verified) await this.db.notify(DOMAINS_CHANNEL, d.id).catch(() => {});
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
