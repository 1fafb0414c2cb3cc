import type { CertificateSource } from "./store.ts";

/** What makes a certificate for one host: an ACME server (acme.ts) or the internal CA (internal.ts). */
export interface Issuer {
  readonly source: CertificateSource;
  /** A certificate chain (leaf first) and its private key, both PEM; throws with a sentence on failure. */
  issue(hostname: string): Promise<{ certPem: string; keyPem: string }>;
}

/** Why an order failed, as a sentence for the domain's `certificate.reason` and the event. */
export class IssueError extends Error {}
