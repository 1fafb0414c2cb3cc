// Naming a revision on the command line: its number (`5` or `#5`, the creation order the console
// and `slipway revisions` show), a unique prefix of its id (at least 6 hex characters), or its id.
// One resolver for every command that takes a revision.
import { type Deployment, type Revision, type Slipway, SlipwayError, unwrap } from "../sdk/client.ts";
import { getRevision } from "../sdk/revisions.ts";
import { UsageError } from "./args.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NUMBER = /^#?(\d{1,9})$/;
const PREFIX = /^[0-9a-f][0-9a-f-]*$/i;
const MIN_PREFIX = 6;
const PAGE = 100;

export const REVISION_FORMS =
  "a revision number (5 or #5), an id prefix of at least 6 hex characters, or an id";

/** `#5 (1009be3a-…)`: how a revision is named in messages. */
export const revisionLabel = (r: Revision): string => `#${r.number} (${r.id})`;

/**
 * The deployment's revisions, newest first, page by page, until `stop` says enough (it sees each
 * page) or there are no more.
 */
async function scanRevisions(
  client: Slipway,
  deploymentId: string,
  stop: (page: Revision[]) => boolean,
): Promise<void> {
  for (let offset = 0; ; ) {
    const page = await unwrap(
      client.api.GET("/v2/deployments/{deployment_id}/revisions", {
        params: { path: { deployment_id: deploymentId }, query: { limit: PAGE, offset } },
      }),
    );
    if (stop(page.resources) || page.resources.length < PAGE) return;
    offset = page.offset;
  }
}

async function byNumber(client: Slipway, dep: Deployment, n: number): Promise<Revision | { newest: number }> {
  let found: Revision | undefined;
  let newest = 0;
  await scanRevisions(client, dep.id, (page) => {
    newest ||= page[0]?.number ?? 0;
    found = page.find((r) => r.number === n);
    // Newest first: once a page goes below n, no later page holds it.
    return found !== undefined || (page.at(-1)?.number ?? 0) < n;
  });
  return found ?? { newest };
}

async function byPrefix(client: Slipway, dep: Deployment, prefix: string): Promise<Revision[]> {
  const matches: Revision[] = [];
  await scanRevisions(client, dep.id, (page) => {
    matches.push(...page.filter((r) => r.id.startsWith(prefix)));
    return false;
  });
  return matches;
}

/**
 * The revision `ref` names in `dep`. An unknown number, id or prefix is not found (exit 4); an
 * ambiguous prefix, or a `ref` of no known form, is a usage error (exit 2) that names the choices.
 */
export async function resolveRevision(client: Slipway, dep: Deployment, ref: string): Promise<Revision> {
  const text = ref.trim().toLowerCase();
  if (UUID.test(text)) {
    return getRevision(client, dep.id, text).catch((err: unknown) => {
      if (err instanceof SlipwayError && err.status === 404)
        throw new SlipwayError(404, `Deployment ${dep.name} has no revision ${text}.`);
      throw err;
    });
  }
  const number = NUMBER.exec(text);
  if (number) {
    const found = await byNumber(client, dep, Number(number[1]));
    if (!("newest" in found)) return found;
    // Six digits or more may be an id prefix that happens to have no letters.
    if (text.startsWith("#") || text.length < MIN_PREFIX) {
      const have = found.newest ? `its revisions are #1 to #${found.newest}` : "it has no revisions yet";
      throw new SlipwayError(
        404,
        `Deployment ${dep.name} has no revision ${text.replace(/^#?/, "#")}: ${have}.`,
      );
    }
  }
  if (!PREFIX.test(text) || text.replace(/-/g, "").length < MIN_PREFIX)
    throw new UsageError(`${JSON.stringify(ref)} names no revision: give ${REVISION_FORMS}.`);
  const matches = await byPrefix(client, dep, text);
  const [only, ...others] = matches;
  if (!only) throw new SlipwayError(404, `No revision of ${dep.name} has an id starting with ${text}.`);
  if (others.length)
    throw new UsageError(
      `${text} is the start of ${matches.length} revisions of ${dep.name}: ${matches.map(revisionLabel).join(", ")}. Give more of the id, or the number.`,
    );
  return only;
}
