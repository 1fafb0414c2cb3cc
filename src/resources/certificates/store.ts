import { sql } from "drizzle-orm";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { acmeAccounts, tlsAuthorities, tlsCertificates } from "../../db/schema/index.ts";
import { isoSql } from "../../db/sql.ts";

/**
 * The only module that writes SQL on `tls_certificates`, `acme_accounts`, `acme_challenges` and
 * `tls_authorities` (migration 0033). Private keys arrive here already encrypted (keeper.ts).
 */

export type CertificateSource = "acme" | "internal";

/** A host the edge serves, with whom it belongs to (events name the workspace). */
export interface WantedHost {
  hostname: string;
  deployment_id: string;
  workspace_id: string;
  organization_id: string;
}

/**
 * The hosts that get certificates: every deployment this server's kind runs (an active revision,
 * not being deleted, not on a cluster) at `<name>.<apps domain>`, and its verified custom domains.
 * Custom domains only once verified: never an order for a host whose owner is not proven.
 */
const wantedSql = (appsDomain: string) => sql`
  SELECT lower(d.name || '.' || ${appsDomain}::text) AS hostname, d.id AS deployment_id,
         d.workspace_id, d.organization_id
    FROM deployments d
   WHERE d.active_revision_id IS NOT NULL AND d.status <> 'AWAITING_DELETE' AND NOT d.remote_reconciled
  UNION ALL
  SELECT c.hostname, d.id, d.workspace_id, d.organization_id
    FROM custom_domains c JOIN deployments d ON d.id = c.deployment_id
   WHERE c.verification_status = 'verified' AND d.active_revision_id IS NOT NULL
     AND d.status <> 'AWAITING_DELETE' AND NOT d.remote_reconciled`;

export function wantedHosts(exec: Reader, appsDomain: string): Promise<WantedHost[]> {
  return rows<WantedHost>(exec, wantedSql(appsDomain));
}

/** Adds a pending row for each wanted host that has none (what the claims below pick from). */
export async function addMissingHosts(
  exec: Executor,
  appsDomain: string,
  source: CertificateSource,
): Promise<void> {
  await exec.execute(
    sql`INSERT INTO tls_certificates (hostname, source)
        SELECT DISTINCT w.hostname, ${source} FROM (${wantedSql(appsDomain)}) w
        ON CONFLICT (hostname) DO NOTHING`,
  );
}

/** A row claimed for ordering: this server holds its lease until it saves the result. */
export interface ClaimedCertificate {
  id: string;
  hostname: string;
  failed_attempts: number;
}

/**
 * Due: never issued, issued by another source (the mode changed), or past two thirds of its life;
 * and not waiting out a back-off, and not leased by another server.
 */
const dueSql = (source: CertificateSource) => sql`
  (status <> 'issued' OR source <> ${source}
     OR now() >= not_before + (not_after - not_before) * 2 / 3)
  AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())`;

/**
 * Leases up to `limit` due certificates of wanted hosts (one `hostname` only, when given). Two
 * servers never lease one row at once (SKIP LOCKED, then the lease), so one server orders at a time.
 */
export function claimDue(
  exec: Executor,
  o: {
    appsDomain: string;
    source: CertificateSource;
    owner: string;
    leaseMs: number;
    limit: number;
    hostname?: string;
  },
): Promise<ClaimedCertificate[]> {
  const only = o.hostname === undefined ? sql`` : sql`AND hostname = ${o.hostname}`;
  return rows<ClaimedCertificate>(
    exec,
    sql`UPDATE tls_certificates AS t
           SET lease_owner = ${o.owner}, lease_until = now() + make_interval(secs => ${o.leaseMs / 1000})
         WHERE t.id IN (SELECT id FROM tls_certificates
                         WHERE ${dueSql(o.source)} ${only}
                           AND hostname IN (SELECT hostname FROM (${wantedSql(o.appsDomain)}) w)
                         ORDER BY next_attempt_at LIMIT ${o.limit} FOR UPDATE SKIP LOCKED)
         RETURNING t.id, t.hostname, t.failed_attempts`,
  );
}

/** An order succeeded: the certificate serves from now on, on every server. */
export async function saveIssued(
  exec: Executor,
  c: {
    id: string;
    owner: string;
    source: CertificateSource;
    certPem: string;
    keyEnc: string;
    notBefore: Date;
    notAfter: Date;
  },
): Promise<void> {
  await exec.execute(
    sql`UPDATE tls_certificates
           SET status = 'issued', reason = NULL, source = ${c.source}, cert_pem = ${c.certPem},
               key_enc = ${c.keyEnc}, not_before = ${c.notBefore.toISOString()}::timestamptz,
               not_after = ${c.notAfter.toISOString()}::timestamptz, failed_attempts = 0,
               next_attempt_at = now(), lease_owner = NULL, lease_until = NULL, updated_at = now()
         WHERE id = ${c.id} AND lease_owner = ${c.owner}`,
  );
}

/**
 * An order failed: why, and when to try again. A certificate still valid keeps serving (and its
 * status `issued`, the reason telling of the failed renewal); otherwise the status is `failed`.
 */
export async function saveFailure(
  exec: Executor,
  c: { id: string; owner: string; reason: string; retryInMs: number },
): Promise<{ status: "issued" | "failed" } | undefined> {
  const [row] = await rows<{ status: "issued" | "failed" }>(
    exec,
    sql`UPDATE tls_certificates
           SET status = CASE WHEN status = 'issued' AND not_after > now() THEN 'issued' ELSE 'failed' END,
               reason = ${c.reason}, failed_attempts = failed_attempts + 1,
               next_attempt_at = now() + make_interval(secs => ${c.retryInMs / 1000}),
               lease_owner = NULL, lease_until = NULL, updated_at = now()
         WHERE id = ${c.id} AND lease_owner = ${c.owner}
         RETURNING status`,
  );
  return row;
}

/** An issued certificate as the edge loads it. */
export interface StoredCertificate {
  id: string;
  hostname: string;
  source: CertificateSource;
  cert_pem: string;
  key_enc: string;
  not_after: string;
  updated_at: string;
}

const STORED = sql.raw(`id, hostname, source, cert_pem, key_enc, ${isoSql("not_after")} AS not_after,
  ${isoSql("updated_at")} AS updated_at`);

/** Certificates changed after `since` (an ISO time; the edge keeps its copies current with it). */
export function certificatesChangedSince(exec: Reader, since: string): Promise<StoredCertificate[]> {
  return rows<StoredCertificate>(
    exec,
    sql`SELECT ${STORED} FROM tls_certificates
         WHERE cert_pem IS NOT NULL AND key_enc IS NOT NULL AND updated_at >= ${since}::timestamptz
         ORDER BY updated_at`,
  );
}

export async function storedCertificate(
  exec: Reader,
  hostname: string,
): Promise<StoredCertificate | undefined> {
  const [row] = await rows<StoredCertificate>(
    exec,
    sql`SELECT ${STORED} FROM tls_certificates
         WHERE hostname = ${hostname} AND cert_pem IS NOT NULL AND key_enc IS NOT NULL`,
  );
  return row;
}

/** Whether some server holds the lease of `hostname`'s certificate: an order is under way. */
export async function orderUnderWay(exec: Reader, hostname: string): Promise<boolean> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM tls_certificates WHERE hostname = ${hostname} AND lease_until > now()`,
  );
  return found.length > 0;
}

/** What the domains API shows of a host's certificate. */
export interface CertificateState {
  hostname: string;
  status: "pending" | "issued" | "failed";
  not_after: string | null;
  reason: string | null;
}

export function certificateStates(exec: Reader, hostnames: string[]): Promise<CertificateState[]> {
  if (hostnames.length === 0) return Promise.resolve([]);
  return rows<CertificateState>(
    exec,
    sql`SELECT hostname, status, ${sql.raw(isoSql("not_after"))} AS not_after, reason FROM tls_certificates
         WHERE hostname IN (${sql.join(
           hostnames.map((h) => sql`${h}`),
           sql`, `,
         )})`,
  );
}

/** An HTTP-01 answer, visible to every server's edge until it expires. */
export async function putChallenge(exec: Executor, token: string, keyAuthorization: string, ttlMs: number) {
  await exec.execute(
    sql`INSERT INTO acme_challenges (token, key_authorization, expires_at)
        VALUES (${token}, ${keyAuthorization}, now() + make_interval(secs => ${ttlMs / 1000}))
        ON CONFLICT (token) DO UPDATE SET key_authorization = EXCLUDED.key_authorization,
                                          expires_at = EXCLUDED.expires_at`,
  );
  await exec.execute(sql`DELETE FROM acme_challenges WHERE expires_at < now()`);
}

export async function challengeAnswer(exec: Reader, token: string): Promise<string | undefined> {
  const [row] = await rows<{ key_authorization: string }>(
    exec,
    sql`SELECT key_authorization FROM acme_challenges WHERE token = ${token} AND expires_at > now()`,
  );
  return row?.key_authorization;
}

export async function deleteChallenge(exec: Executor, token: string): Promise<void> {
  await exec.execute(sql`DELETE FROM acme_challenges WHERE token = ${token}`);
}

export interface AcmeAccountRow {
  id: string;
  key_enc: string;
  account_url: string | null;
}

export async function acmeAccount(exec: Reader, directoryUrl: string): Promise<AcmeAccountRow | undefined> {
  const [row] = await rows<AcmeAccountRow>(
    exec,
    sql`SELECT id, key_enc, account_url FROM acme_accounts WHERE directory_url = ${directoryUrl}`,
  );
  return row;
}

/** Stores an account key unless one is stored for the directory (the first writer wins); `keyEnc` names `id`. */
export async function insertAcmeAccount(
  exec: Executor,
  a: { id: string; directoryUrl: string; keyEnc: string },
): Promise<void> {
  await exec.execute(
    sql`INSERT INTO acme_accounts (id, directory_url, key_enc) VALUES (${a.id}, ${a.directoryUrl}, ${a.keyEnc})
        ON CONFLICT (directory_url) DO NOTHING`,
  );
}

export async function setAcmeAccountUrl(exec: Executor, id: string, url: string): Promise<void> {
  await exec.execute(sql`UPDATE acme_accounts SET account_url = ${url} WHERE id = ${id}`);
}

export interface AuthorityRow {
  id: string;
  cert_pem: string;
  key_enc: string;
}

export async function authority(exec: Reader, name: string): Promise<AuthorityRow | undefined> {
  const [row] = await rows<AuthorityRow>(
    exec,
    sql`SELECT id, cert_pem, key_enc FROM tls_authorities WHERE name = ${name}`,
  );
  return row;
}

/** Stores a CA unless one of that name is stored (the first writer wins); `keyEnc` names `id`. */
export async function insertAuthority(
  exec: Executor,
  a: { id: string; name: string; certPem: string; keyEnc: string },
): Promise<void> {
  await exec.execute(
    sql`INSERT INTO tls_authorities (id, name, cert_pem, key_enc)
        VALUES (${a.id}, ${a.name}, ${a.certPem}, ${a.keyEnc}) ON CONFLICT (name) DO NOTHING`,
  );
}

/** The encrypted columns of this store's tables, for key rotation. */
export const certificateEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, tlsCertificates, tlsCertificates.keyEnc),
  envelopeColumn(exec, acmeAccounts, acmeAccounts.keyEnc),
  envelopeColumn(exec, tlsAuthorities, tlsAuthorities.keyEnc),
];
