import { randomBytes } from "node:crypto";
import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { deploymentExists } from "../../core/deployments/read-store.ts";
import { rehostCustomUrl } from "../../core/deployments/runtime-store.ts";
import { conflict, notFound } from "../../core/errors.ts";
import { DOMAINS_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { type CertificateState, certificateStates } from "../certificates/store.ts";
import { normalizeHostname } from "./hostname.ts";
import type { Domain } from "./schema.ts";
import { type DomainRow, deleteDomainRow, domainRows, hostnameClaim, insertDomain } from "./store.ts";

/** Custom domains of a deployment: add (pending until its TXT record is seen), list, remove. */

export type DomainsDb = Pick<Database, "orm" | "notify">;

/** The DNS name whose TXT record must hold a domain's token. */
export const recordName = (hostname: string) => `_slipway.${hostname}`;

/**
 * A domain's certificate: `none` while certificates are not managed (TLS off or from files) or the
 * domain is unverified (nothing is ordered before); then the keeper's row (resources/certificates),
 * `pending` until it has one.
 */
function certificateOf(row: DomainRow, managed: boolean, state: CertificateState | undefined) {
  if (!managed || row.verification_status !== "verified")
    return { status: "none" as const, expires_at: null, reason: null };
  if (state === undefined) return { status: "pending" as const, expires_at: null, reason: null };
  return { status: state.status, expires_at: state.not_after, reason: state.reason };
}

export function domainAnswer(row: DomainRow, managed = false, state?: CertificateState): Domain {
  return {
    id: row.id,
    hostname: row.hostname,
    verification: {
      status: row.verification_status,
      record_name: recordName(row.hostname),
      token: row.token,
      reason: row.verification_reason,
    },
    certificate: certificateOf(row, managed, state),
  };
}

async function assertDeployment(db: DomainsDb, workspaceId: string, deploymentId: string): Promise<void> {
  if (!(await deploymentExists(db.orm, workspaceId, deploymentId))) throw notFound("Deployment not found.");
}

/** `managedCertificates`: SLIPWAY_APPS_TLS is acme or internal (the keeper orders certificates). */
export async function listDomains(
  db: DomainsDb,
  workspaceId: string,
  deploymentId: string,
  managedCertificates = false,
): Promise<Domain[]> {
  await assertDeployment(db, workspaceId, deploymentId);
  const domains = await domainRows(db.orm, workspaceId, deploymentId);
  const states = managedCertificates
    ? new Map(
        (
          await certificateStates(
            db.orm,
            domains.map((d) => d.hostname),
          )
        ).map((c) => [c.hostname, c]),
      )
    : new Map<string, CertificateState>();
  return domains.map((d) => domainAnswer(d, managedCertificates, states.get(d.hostname)));
}

/** Why a claimed hostname cannot be added: one hostname serves one deployment on the server. */
async function claimedConflict(db: DomainsDb, workspaceId: string, deploymentId: string, hostname: string) {
  const claim = await hostnameClaim(db.orm, hostname);
  if (claim === undefined) return conflict(`${hostname} is already claimed.`);
  if (claim.workspace_id !== workspaceId) return conflict(`${hostname} is claimed in another workspace.`);
  if (claim.deployment_id === deploymentId)
    return conflict(`${hostname} is already a domain of this deployment.`);
  return conflict(`${hostname} is a domain of another deployment of this workspace: remove it there first.`);
}

export async function addDomain(
  db: DomainsDb,
  appsDomain: string,
  workspaceId: string,
  deploymentId: string,
  rawHostname: string,
): Promise<Domain> {
  const hostname = normalizeHostname(rawHostname, appsDomain);
  await assertDeployment(db, workspaceId, deploymentId);
  if ((await hostnameClaim(db.orm, hostname)) !== undefined) {
    throw await claimedConflict(db, workspaceId, deploymentId, hostname);
  }
  try {
    const row = await inAuditedTransaction(
      db.orm,
      (tx) =>
        insertDomain(tx, { workspaceId, deploymentId, hostname, token: randomBytes(20).toString("hex") }),
      (r) => r.id,
    );
    return domainAnswer(row);
  } catch (err) {
    // Two claims at once: the unique index decides.
    if (isUniqueViolation(err)) throw await claimedConflict(db, workspaceId, deploymentId, hostname);
    throw err;
  }
}

/** Removing a domain stops the edge serving it and moves `custom_url` to the next verified one. */
export async function removeDomain(
  db: DomainsDb,
  appsDomain: string,
  workspaceId: string,
  deploymentId: string,
  domainId: string,
): Promise<Domain> {
  const row = await inAuditedTransaction(db.orm, async (tx) => {
    const gone = await deleteDomainRow(tx, workspaceId, deploymentId, domainId);
    if (gone?.verification_status === "verified") await rehostCustomUrl(tx, deploymentId, appsDomain);
    return gone;
  });
  if (!row) throw notFound("Domain not found.");
  // Edges also reload on a timer: a lost notification only delays the change.
  await db.notify(DOMAINS_CHANNEL, row.id).catch(() => {});
  return domainAnswer(row);
}
