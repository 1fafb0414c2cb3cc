import { Resolver } from "node:dns/promises";

/** Whether a domain's TXT record holds its token, through one DNS server or the system's. */

export type CheckResult = { ok: true } | { ok: false; reason: string };

/** A resolver asking `server` (`host:port`, SLIPWAY_DNS_RESOLVER) or, without one, the system's servers. */
export function txtResolver(server: string | undefined): Resolver {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (server !== undefined) resolver.setServers([server]);
  return resolver;
}

const NO_RECORD = new Set(["ENOTFOUND", "ENODATA"]);

export async function checkTxt(resolver: Resolver, recordName: string, token: string): Promise<CheckResult> {
  let records: string[][];
  try {
    records = await resolver.resolveTxt(recordName);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && NO_RECORD.has(code))
      return { ok: false, reason: `No TXT record at ${recordName}.` };
    return { ok: false, reason: `The DNS lookup of ${recordName} failed (${String(code ?? err)}).` };
  }
  // A long TXT value comes in chunks of 255 bytes: the record is their concatenation.
  const values = records.map((chunks) => chunks.join(""));
  if (values.includes(token)) return { ok: true };
  const found = values.slice(0, 3).map((v) => JSON.stringify(v.slice(0, 80)));
  return {
    ok: false,
    reason: `The TXT record at ${recordName} does not hold the token (found ${found.join(", ")}).`,
  };
}
