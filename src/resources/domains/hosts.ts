import { DOMAINS_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { verifiedHosts } from "./store.ts";

/**
 * The edge's custom hosts (the apps router's `CustomHosts`): verified hostname → deployment name,
 * in memory because the router asks on every request. Reloaded on a DOMAINS_CHANNEL notification
 * (a domain verified or removed, by any server on the database) and every `refreshMs`, which also
 * covers deployments deleted with their domains and notifications lost.
 */
export class VerifiedHosts {
  private hosts = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private loading: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly db: Pick<Database, "orm" | "listen">,
    private readonly refreshMs = 30_000,
  ) {}

  nameOf(hostname: string): string | undefined {
    return this.hosts.get(hostname);
  }

  entries(): Iterable<[string, string]> {
    return this.hosts.entries();
  }

  async start(): Promise<void> {
    this.unlisten = await this.db.listen(DOMAINS_CHANNEL, () => void this.reload().catch(() => {}));
    await this.reload();
    this.timer = setInterval(() => void this.reload().catch(() => {}), this.refreshMs);
    this.timer.unref();
  }

  /** Loads the map again; a change announced during a load gets a load of its own after it. */
  reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.again = false;
          const rows = await verifiedHosts(this.db.orm);
          this.hosts = new Map(rows.map((r) => [r.hostname, r.name]));
        } while (this.again);
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.unlisten?.();
    await this.loading?.catch(() => {});
  }
}
