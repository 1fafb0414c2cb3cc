import { randomUUID } from "node:crypto";
import { Agent } from "node:https";
import * as acme from "acme-client";
import { encryptionContext, type Keyring } from "../../crypto/envelope.ts";
import type { Database } from "../../db/client.ts";
import { IssueError, type Issuer } from "./issuer.ts";
import { acmeAccount, deleteChallenge, insertAcmeAccount, putChallenge, setAcmeAccountUrl } from "./store.ts";

/**
 * Certificates from an ACME server (RFC 8555) through the `acme-client` library, validated by
 * HTTP-01: the answer is stored in the database so that whichever server's edge the ACME server
 * reaches on port 80 answers it (challenge.ts). The account key is made once per directory URL
 * and stored encrypted, bound to its row.
 */

export interface AcmeOptions {
  directoryUrl: string;
  /** PEM bundle trusted for the ACME server (SLIPWAY_ACME_CA_FILE); the system's CAs when unset. */
  ca: string | undefined;
  email: string | undefined;
}

/** How long a stored HTTP-01 answer is served: an order that outlives it has failed anyway. */
const CHALLENGE_TTL_MS = 10 * 60_000;

const accountContext = (id: string) => encryptionContext("acme_accounts", "key_enc", id);

export class AcmeIssuer implements Issuer {
  readonly source = "acme" as const;
  private client: Promise<acme.Client> | undefined;

  constructor(
    private readonly db: Pick<Database, "orm">,
    private readonly keyring: Keyring,
    private readonly o: AcmeOptions,
  ) {
    // acme-client talks through its own axios instance, which takes no per-client agent: the CA
    // bundle applies to the process's every ACME request, which are all this issuer's.
    if (o.ca !== undefined) acme.axios.defaults.httpsAgent = new Agent({ ca: o.ca, keepAlive: true });
  }

  /** The account key of this directory: the stored one, or a new one stored by the first server. */
  private async accountKey(): Promise<{ id: string; key: string; url: string | null }> {
    let row = await acmeAccount(this.db.orm, this.o.directoryUrl);
    if (row === undefined) {
      const id = randomUUID();
      const key = (await acme.crypto.createPrivateEcdsaKey()).toString();
      await insertAcmeAccount(this.db.orm, {
        id,
        directoryUrl: this.o.directoryUrl,
        keyEnc: this.keyring.encrypt(key, accountContext(id)),
      });
      // Another server may have stored its key first: everyone uses the stored one.
      row = await acmeAccount(this.db.orm, this.o.directoryUrl);
      if (row === undefined) throw new Error("the ACME account key was not stored");
    }
    return {
      id: row.id,
      key: this.keyring.decrypt(row.key_enc, accountContext(row.id)),
      url: row.account_url,
    };
  }

  private async clientOf(): Promise<acme.Client> {
    if (this.client !== undefined) return this.client;
    const made = (async () => {
      const account = await this.accountKey();
      const client = new acme.Client({
        directoryUrl: this.o.directoryUrl,
        accountKey: account.key,
        accountUrl: account.url ?? undefined,
        // Polls of orders and challenges: soon at first, then slower (the library's default waits 5 s).
        backoffMin: 250,
        backoffMax: 10_000,
        backoffAttempts: 12,
      });
      if (account.url === null) {
        await client.createAccount({
          termsOfServiceAgreed: true,
          ...(this.o.email === undefined ? {} : { contact: [`mailto:${this.o.email}`] }),
        });
        await setAcmeAccountUrl(this.db.orm, account.id, client.getAccountUrl());
      }
      return client;
    })();
    this.client = made;
    // A failed start (the server unreachable) is tried again by the next order.
    made.catch(() => {
      if (this.client === made) this.client = undefined;
    });
    return made;
  }

  async issue(hostname: string): Promise<{ certPem: string; keyPem: string }> {
    try {
      const client = await this.clientOf();
      const [key, csr] = await acme.crypto.createCsr(
        { commonName: hostname, altNames: [hostname] },
        await acme.crypto.createPrivateEcdsaKey(),
      );
      const certPem = await client.auto({
        csr,
        email: this.o.email,
        termsOfServiceAgreed: true,
        challengePriority: ["http-01"],
        // The library would fetch the token itself first, through this machine's DNS, which need
        // not point at us (a proxy, split DNS): the ACME server's own check is the one that counts.
        skipChallengeVerification: true,
        challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
          if (challenge.type !== "http-01") throw new Error(`unexpected ${challenge.type} challenge`);
          await putChallenge(this.db.orm, challenge.token, keyAuthorization, CHALLENGE_TTL_MS);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          await deleteChallenge(this.db.orm, challenge.token);
        },
      });
      return { certPem, keyPem: key.toString() };
    } catch (err) {
      throw new IssueError(`the ACME server did not issue a certificate for ${hostname}: ${describe(err)}`);
    }
  }
}

/** The ACME problem's detail when there is one (acme-client puts it in the message). */
function describe(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/\s+/g, " ").slice(0, 500);
}
