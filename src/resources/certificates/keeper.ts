import { randomUUID, X509Certificate } from "node:crypto";
import { createSecureContext, type SecureContext } from "node:tls";
import { emit } from "../../core/events/emit.ts";
import { encryptionContext, type Keyring } from "../../crypto/envelope.ts";
import type { Database } from "../../db/client.ts";
import type { Issuer } from "./issuer.ts";
import {
  addMissingHosts,
  type ClaimedCertificate,
  certificatesChangedSince,
  claimDue,
  orderUnderWay,
  type StoredCertificate,
  saveFailure,
  saveIssued,
  storedCertificate,
  type WantedHost,
  wantedHosts,
} from "./store.ts";

/**
 * Keeps a certificate for every host the edge serves (docs/https.md): ordered ahead of time when a
 * deployment or verified domain appears (each look-over, every `checkEveryMs`), and on demand at
 * the first TLS handshake for such a host; renewed at two thirds of its life; failures retried with
 * back-off and reported as events. Certificates live in the database, so every server on it serves
 * the same ones; a lease on each row makes one server order at a time. The edge asks `context`.
 */

export interface KeeperOptions {
  appsDomain: string;
  /** Pause between look-overs, and the first pause after a failed order (doubled per failure). */
  checkEveryMs: number;
  /** Longest a handshake waits for an order it started or saw (below the handshake timeout). */
  onDemandWaitMs: number;
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/** Longest pause between attempts of a failing order. */
const MAX_BACKOFF_MS = 6 * 3_600_000;
/** How long one order may take before another server may take it over. */
const LEASE_MS = 5 * 60_000;
/** How long stopping waits for orders under way. */
const STOP_WAIT_MS = 5000;
/** Orders one look-over starts at most (the rest wait for the next). */
const BATCH = 5;

export const orderBackoffMs = (base: number, failures: number) =>
  Math.min(MAX_BACKOFF_MS, base * 2 ** Math.min(failures, 20));

const keyContext = (id: string) => encryptionContext("tls_certificates", "key_enc", id);

interface Loaded {
  context: SecureContext;
  notAfter: number;
  updatedAt: string;
}

export class CertificateKeeper {
  /** Who holds a lease: this keeper, among the servers on the database. */
  readonly owner = randomUUID();
  private readonly loaded = new Map<string, Loaded>();
  private since = "1970-01-01T00:00:00.000Z";
  private wanted = new Map<string, WantedHost>();
  /** When the look that `wanted` came from began. */
  private wantedAsOf = 0;
  private wantedLoading: Promise<void> | undefined;
  private readonly ordering = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  /** Orders this keeper placed (tests count them across servers). */
  orders = 0;

  constructor(
    private readonly db: Pick<Database, "orm">,
    private readonly keyring: Keyring,
    private readonly issuer: Issuer,
    private readonly o: KeeperOptions,
  ) {}

  start(): void {
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick()
        .catch((err: unknown) => this.o.logger.warn({ err }, "certificates: look-over failed"))
        .finally(() => this.schedule(this.o.checkEveryMs));
    }, ms);
    this.timer.unref();
  }

  /** One look-over: new hosts get rows, due ones (new, expiring, failed) are ordered, changes loaded. */
  async tick(): Promise<void> {
    await this.refreshWanted();
    await addMissingHosts(this.db.orm, this.o.appsDomain, this.issuer.source);
    const due = await claimDue(this.db.orm, {
      appsDomain: this.o.appsDomain,
      source: this.issuer.source,
      owner: this.owner,
      leaseMs: LEASE_MS,
      limit: BATCH,
    });
    await Promise.all(due.map((c) => this.orderClaimed(c)));
    await this.loadChanged();
    for (const host of this.loaded.keys()) if (!this.wanted.has(host)) this.loaded.delete(host);
  }

  /**
   * The TLS context for an SNI name, or undefined (the handshake then fails): only hosts Slipway
   * serves get one, ordered now if they have none yet. Never an order for any other name.
   */
  async context(servername: string): Promise<SecureContext | undefined> {
    const host = servername.toLowerCase().replace(/\.$/, "");
    const now = Date.now();
    const held = this.loaded.get(host);
    if (held !== undefined && held.notAfter > now) return held.context;
    if (!(await this.serves(host))) return undefined;
    const stored = await storedCertificate(this.db.orm, host);
    if (stored !== undefined && Date.parse(stored.not_after) > now) return this.load(stored);
    return this.orderOnDemand(host);
  }

  /**
   * Whether `host` is served, as of a look at the database that began after the handshake did (a
   * deployment or domain may have become active a moment ago). Handshakes with unknown names share
   * looks: one query at a time, whatever their number.
   */
  private async serves(host: string): Promise<boolean> {
    if (this.wanted.has(host)) return true;
    const asked = Date.now();
    while (this.wantedAsOf < asked) await this.refreshWanted();
    return this.wanted.has(host);
  }

  private refreshWanted(): Promise<void> {
    if (this.wantedLoading !== undefined) return this.wantedLoading;
    const started = Date.now();
    const loading = wantedHosts(this.db.orm, this.o.appsDomain)
      .then((rows) => {
        this.wanted = new Map(rows.map((r) => [r.hostname, r]));
        this.wantedAsOf = started;
      })
      .finally(() => {
        this.wantedLoading = undefined;
      });
    this.wantedLoading = loading;
    return loading;
  }

  /** Orders `host` now if no server is at it, then waits for a certificate (any server's). */
  private async orderOnDemand(host: string): Promise<SecureContext | undefined> {
    let mine = this.ordering.get(host);
    if (mine === undefined) {
      await addMissingHosts(this.db.orm, this.o.appsDomain, this.issuer.source);
      const [claimed] = await claimDue(this.db.orm, {
        appsDomain: this.o.appsDomain,
        source: this.issuer.source,
        owner: this.owner,
        leaseMs: LEASE_MS,
        limit: 1,
        hostname: host,
      });
      if (claimed !== undefined) mine = this.orderClaimed(claimed);
    }
    const deadline = Date.now() + this.o.onDemandWaitMs;
    if (mine !== undefined) {
      await Promise.race([mine, new Promise((r) => setTimeout(r, this.o.onDemandWaitMs).unref())]);
    }
    // Another server's order: look for its result until the handshake gives up. None under way
    // (the host is backing off after failures): fail this handshake now.
    for (;;) {
      const stored = await storedCertificate(this.db.orm, host);
      if (stored !== undefined && Date.parse(stored.not_after) > Date.now()) return this.load(stored);
      if (mine !== undefined || Date.now() >= deadline || this.stopped) return undefined;
      if (!(await orderUnderWay(this.db.orm, host))) return undefined;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Places one order for a leased row and records its outcome (never throws). */
  private orderClaimed(c: ClaimedCertificate): Promise<void> {
    const existing = this.ordering.get(c.hostname);
    if (existing !== undefined) return existing;
    const done = this.order(c).finally(() => this.ordering.delete(c.hostname));
    this.ordering.set(c.hostname, done);
    return done;
  }

  private async order(c: ClaimedCertificate): Promise<void> {
    const host = this.wanted.get(c.hostname);
    this.orders++;
    try {
      const { certPem, keyPem } = await this.issuer.issue(c.hostname);
      const leaf = new X509Certificate(certPem);
      const notBefore = new Date(leaf.validFrom);
      const notAfter = new Date(leaf.validTo);
      await saveIssued(this.db.orm, {
        id: c.id,
        owner: this.owner,
        source: this.issuer.source,
        certPem,
        keyEnc: this.keyring.encrypt(keyPem, keyContext(c.id)),
        notBefore,
        notAfter,
      });
      this.loaded.set(c.hostname, {
        context: createSecureContext({ cert: certPem, key: keyPem }),
        notAfter: notAfter.getTime(),
        updatedAt: new Date().toISOString(),
      });
      this.o.logger.info({ hostname: c.hostname, expiresAt: notAfter }, "certificates: issued");
      if (host !== undefined) {
        await emit(this.db.orm, {
          organizationId: host.organization_id,
          workspaceId: host.workspace_id,
          type: "certificate.issued",
          data: {
            deployment_id: host.deployment_id,
            hostname: c.hostname,
            expires_at: notAfter.toISOString(),
          },
        }).catch((err: unknown) => this.o.logger.warn({ err }, "certificates: event not recorded"));
      }
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      const retryInMs = orderBackoffMs(this.o.checkEveryMs, c.failed_attempts);
      this.o.logger.warn({ hostname: c.hostname, reason, retryInMs }, "certificates: order failed");
      const saved = await saveFailure(this.db.orm, { id: c.id, owner: this.owner, reason, retryInMs }).catch(
        (e: unknown) => {
          this.o.logger.warn({ err: e }, "certificates: failure not recorded");
          return undefined;
        },
      );
      if (host !== undefined && saved !== undefined) {
        await emit(this.db.orm, {
          organizationId: host.organization_id,
          workspaceId: host.workspace_id,
          type: "certificate.failed",
          data: {
            deployment_id: host.deployment_id,
            hostname: c.hostname,
            reason,
            // Whether a certificate still serves (a failed renewal) or none does.
            still_serving: saved.status === "issued",
            retry_in_s: Math.round(retryInMs / 1000),
          },
        }).catch((e: unknown) => this.o.logger.warn({ err: e }, "certificates: event not recorded"));
      }
    }
  }

  /** Loads certificates other servers (or this one) stored since the last look. */
  private async loadChanged(): Promise<void> {
    for (const row of await certificatesChangedSince(this.db.orm, this.since)) {
      this.since = row.updated_at > this.since ? row.updated_at : this.since;
      if (this.wanted.has(row.hostname)) this.load(row);
    }
  }

  private load(row: StoredCertificate): SecureContext | undefined {
    const held = this.loaded.get(row.hostname);
    if (held !== undefined && held.updatedAt === row.updated_at) return held.context;
    try {
      const key = this.keyring.decrypt(row.key_enc, keyContext(row.id));
      const context = createSecureContext({ cert: row.cert_pem, key });
      this.loaded.set(row.hostname, {
        context,
        notAfter: Date.parse(row.not_after),
        updatedAt: row.updated_at,
      });
      return context;
    } catch (err) {
      this.o.logger.warn({ err, hostname: row.hostname }, "certificates: a stored certificate does not load");
      return undefined;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    // An order under way (a look-over's too) may poll its ACME server for minutes: shutdown does
    // not wait that long (its lease lets another server take the order over once it expires).
    await Promise.race([
      Promise.all([this.running, ...this.ordering.values()]),
      new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref()),
    ]);
  }
}
