// Start-up failures of the server commands (serve, migrate, keys rotate) said as what to fix: the
// setting at fault and the fix, not a pg-pool stack. PostgreSQL's SQLSTATE codes and Node's socket
// error codes are what tell the cases apart.

/** The first `code` on the error, its causes or (for a connection tried on several addresses) its errors. */
function codeOf(err: unknown, depth = 0): { code: string; message: string } | undefined {
  if (!err || typeof err !== "object" || depth > 5) return undefined;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === "string")
    return { code: e.code, message: typeof e.message === "string" ? e.message : "" };
  for (const inner of [e.cause, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const found = codeOf(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** The URL with its password masked, fit to print. */
export function maskedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "****";
    return u.href;
  } catch {
    return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:****@");
  }
}

interface Target {
  host: string;
  port: string;
  user: string;
  database: string;
}

function targetOf(url: string): Target {
  const u = new URL(url);
  return {
    host: decodeURIComponent(u.hostname) || "localhost",
    port: u.port || "5432",
    user: decodeURIComponent(u.username) || process.env.PGUSER || process.env.USER || "postgres",
    database:
      decodeURIComponent(u.pathname.replace(/^\//, "")) || decodeURIComponent(u.username) || "postgres",
  };
}

const SOCKET_REASONS: Record<string, string> = {
  ECONNREFUSED: "is it running, and listening on that port?",
  ETIMEDOUT: "is the host up, and the port open to this machine?",
  EHOSTUNREACH: "is the host up, and reachable from this machine?",
  ENETUNREACH: "is the network to it up?",
  ECONNRESET: "it closed the connection: does it accept connections from this machine (SSL, pg_hba.conf)?",
};

/**
 * What to print for a start-up error that comes from the database named by `databaseUrl`; undefined
 * for any other error (it is printed as it is).
 */
export function describeStartupError(err: unknown, databaseUrl: string | undefined): string | undefined {
  if (!databaseUrl || !/^postgres(ql)?:\/\//.test(databaseUrl)) return undefined;
  const found = codeOf(err);
  if (!found) return undefined;
  let t: Target;
  try {
    t = targetOf(databaseUrl);
  } catch {
    return undefined;
  }
  const at = `${t.host}:${t.port}`;
  const setting = `DATABASE_URL=${maskedUrl(databaseUrl)}`;
  const port = t.port === "5432" ? "" : ` -p ${t.port}`;
  switch (found.code) {
    case "3D000":
      return (
        `PostgreSQL at ${at}: database "${t.database}" does not exist: create it with ` +
        `\`createdb -h ${t.host}${port} -U ${t.user} ${t.database}\` or fix ${setting}`
      );
    case "28P01":
      return `PostgreSQL at ${at} refused the password of user "${t.user}": fix the user or password in ${setting}.`;
    case "28000":
      return (
        `PostgreSQL at ${at} refused user "${t.user}" (${found.message}): fix the user in ${setting}, ` +
        "or let it in (CREATE ROLE, pg_hba.conf)."
      );
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot reach PostgreSQL at ${at} (${found.code}: no such host): fix the host in ${setting}.`;
  }
  const reason = SOCKET_REASONS[found.code];
  if (reason) return `cannot reach PostgreSQL at ${at} (${found.code}): ${reason} ${setting}`;
  return undefined;
}
