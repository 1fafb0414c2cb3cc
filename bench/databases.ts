import pg from "pg";

/** The PostgreSQL server the benches create their databases on (`BENCH_DATABASE_URL`). */
const adminUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query(statement);
  } finally {
    await client.end().catch(() => {});
  }
}

/** An empty database `name` (dropped first if it exists); returns its URL. */
export async function freshDatabase(name: string): Promise<string> {
  await dropDatabase(name);
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropDatabase(name: string): Promise<void> {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
