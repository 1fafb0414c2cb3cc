import type { NetworkNamespaces } from "./namespace.ts";

/**
 * The deployment's DATABASE_URI as its namespace reaches it: the same role, password and database,
 * at its gate (pg-gate.ts) instead of the server. Only a URI the reconciler provisioned is gated
 * (role and database alike, named `slipway_app_<hex>`); any other (a tenant's own DATABASE_URI
 * secret for an outside server) is left as it is and follows the egress policy.
 */
const PROVISIONED = /^slipway_app_[0-9a-f]+$/;

export function provisionedDatabase(
  uri: string,
): { role: string; database: string; host: string; port: number } | undefined {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return undefined;
  }
  if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") return undefined;
  const role = decodeURIComponent(u.username);
  const database = decodeURIComponent(u.pathname.slice(1));
  if (!PROVISIONED.test(role) || role !== database) return undefined;
  const host = u.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1";
  return { role, database, host: host === "localhost" ? "127.0.0.1" : host, port: Number(u.port || 5432) };
}

/** DATABASE_URI through the deployment's gate (started now if needed); undefined: not ours to gate. */
export async function gatedDatabaseUri(
  namespaces: NetworkNamespaces,
  deploymentId: string,
  uri: string,
): Promise<string | undefined> {
  const db = provisionedDatabase(uri);
  if (db === undefined) return undefined;
  const gate = await namespaces.gate(deploymentId, { host: db.host, port: db.port }, db.role, db.database);
  const net = await namespaces.ensure(deploymentId);
  const u = new URL(uri);
  u.hostname = net.hostAddress;
  u.port = String(gate.port);
  return u.toString();
}
