import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { createSecureContext, type SecureContext } from "node:tls";
import type { SniSource } from "./tls.ts";

/**
 * SLIPWAY_APPS_TLS=files: `<host>.crt` (the chain, leaf first) and `<host>.key` from one directory,
 * both PEM. Each handshake compares the files' modification times with those it loaded, so a
 * replaced certificate serves from the next connection on, without a restart.
 */
export class FileCertificates implements SniSource {
  private readonly loaded = new Map<string, { stamp: string; context: SecureContext }>();

  constructor(
    private readonly dir: string,
    private readonly logger: { warn(obj: object, msg: string): void },
  ) {}

  async context(servername: string): Promise<SecureContext | undefined> {
    const host = servername.toLowerCase().replace(/\.$/, "");
    // A hostname, never a path: SNI is the client's to choose.
    if (
      !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host) ||
      host.length > 253
    ) {
      return undefined;
    }
    const certPath = join(this.dir, `${host}.crt`);
    const keyPath = join(this.dir, `${host}.key`);
    let stamp: string;
    try {
      const [c, k] = await Promise.all([stat(certPath), stat(keyPath)]);
      stamp = `${c.mtimeMs}:${c.size}:${k.mtimeMs}:${k.size}`;
    } catch {
      this.loaded.delete(host);
      return undefined;
    }
    const held = this.loaded.get(host);
    if (held?.stamp === stamp) return held.context;
    try {
      const [cert, key] = await Promise.all([readFile(certPath), readFile(keyPath)]);
      const context = createSecureContext({ cert, key });
      this.loaded.set(host, { stamp, context });
      return context;
    } catch (err) {
      // Half-written or mismatched files: the previous pair, if any, serves until they are whole.
      this.logger.warn({ err, host }, "apps edge: a certificate in SLIPWAY_APPS_TLS_DIR does not load");
      return held?.context;
    }
  }
}
