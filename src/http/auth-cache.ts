/**
 * Positive API-key lookups, kept briefly so that a request does not pay a database round trip for
 * authentication. Revocation invalidates at once in this process and, through NOTIFY on
 * `slipway_auth`, in every other process sharing the database; the TTL bounds the rest (a lost
 * notification connection).
 */
interface Entry<T> {
  value: T;
  keyId: string;
  expires: number;
}

export class AuthCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly ttlMs = 10_000,
    private readonly maxEntries = 10_000,
  ) {}

  get(cacheKey: string): T | undefined {
    const e = this.entries.get(cacheKey);
    if (!e) return undefined;
    if (e.expires <= Date.now()) {
      this.entries.delete(cacheKey);
      return undefined;
    }
    return e.value;
  }

  set(cacheKey: string, keyId: string, value: T): void {
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(cacheKey, { value, keyId, expires: Date.now() + this.ttlMs });
  }

  /** Drops every cached lookup of one key (revocation). */
  invalidateKey(keyId: string): void {
    for (const [k, e] of this.entries) if (e.keyId === keyId) this.entries.delete(k);
  }

  clear(): void {
    this.entries.clear();
  }
}
