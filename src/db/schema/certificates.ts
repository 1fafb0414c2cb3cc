import { integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

const ts = (name: string) => timestamp(name, { withTimezone: true });

/** The apps edge's certificates and what orders them (migration 0033; resources/certificates/store.ts). */
export const tlsCertificates = pgTable("tls_certificates", {
  id: uuid("id").primaryKey().defaultRandom(),
  hostname: text("hostname").notNull(),
  source: text("source").notNull(),
  status: text("status").notNull().default("pending"),
  reason: text("reason"),
  certPem: text("cert_pem"),
  keyEnc: text("key_enc"),
  notBefore: ts("not_before"),
  notAfter: ts("not_after"),
  failedAttempts: integer("failed_attempts").notNull().default(0),
  nextAttemptAt: ts("next_attempt_at").notNull().defaultNow(),
  leaseOwner: text("lease_owner"),
  leaseUntil: ts("lease_until"),
  updatedAt: ts("updated_at").notNull().defaultNow(),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const acmeAccounts = pgTable("acme_accounts", {
  id: uuid("id").primaryKey().defaultRandom(),
  directoryUrl: text("directory_url").notNull(),
  keyEnc: text("key_enc").notNull(),
  accountUrl: text("account_url"),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const acmeChallenges = pgTable("acme_challenges", {
  token: text("token").primaryKey(),
  keyAuthorization: text("key_authorization").notNull(),
  expiresAt: ts("expires_at").notNull(),
});

export const tlsAuthorities = pgTable("tls_authorities", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull(),
  certPem: text("cert_pem").notNull(),
  keyEnc: text("key_enc").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
});
