// `slipway hook post-receive`: run from a git repository's post-receive hook, it tells Slipway about
// the push at once (docs/codehost.md, "Build on push"), as a GitHub-format push webhook signed with the
// integration's webhook secret, so local_git deployments build without waiting for the poller.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { sign } from "@octokit/webhooks-methods";
import { parseArgs, UsageError } from "./args.ts";

export const HOOK_USAGE = `Usage: slipway hook post-receive --url URL --integration ID --secret-file FILE

Reads the "<old> <new> <ref>" lines git gives a post-receive hook on stdin and sends one signed push
webhook per updated branch to URL/v1/integrations/forge/codehost/ID/webhook (URL: Slipway's). FILE
holds the integration's webhook secret (from its create answer or POST …/webhook-secret).
Put this in <repository>/hooks/post-receive (executable):

  #!/bin/sh
  exec slipway hook post-receive --url http://127.0.0.1:8080 --integration <id> --secret-file /etc/slipway/hook-secret`;

const ZERO = /^0{40}$/;

function git(args: string[]): string {
  return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

/** The repository's URL as the local_git integration lists it: the file: URL of its real directory. */
function repositoryUrl(): string {
  const bare = git(["rev-parse", "--is-bare-repository"]) === "true";
  const dir = bare ? git(["rev-parse", "--absolute-git-dir"]) : git(["rev-parse", "--show-toplevel"]);
  return pathToFileURL(realpathSync(dir)).href;
}

/** The push payload for one updated branch, in the shape of GitHub's push event. */
function payloadOf(oldSha: string, newSha: string, ref: string, url: string): string {
  // A new branch lists no commits (the changed paths are unknown, so watch_paths cannot skip it).
  const changed = ZERO.test(oldSha)
    ? undefined
    : git(["diff", "--name-only", "--no-renames", "-z", oldSha, newSha]).split("\0").filter(Boolean);
  return JSON.stringify({
    ref,
    before: oldSha,
    after: newSha,
    created: ZERO.test(oldSha),
    deleted: ZERO.test(newSha),
    forced: false,
    repository: { name: url.split("/").pop() ?? "", html_url: url, clone_url: url, url },
    commits: changed === undefined ? [] : [{ id: newSha, added: [], removed: [], modified: changed }],
    head_commit: null,
  });
}

export async function postReceive(argv: string[], stdin: string): Promise<number> {
  const args = parseArgs(argv, { values: ["integration", "secret-file"] });
  if (args.bool("help")) {
    console.log(HOOK_USAGE);
    return 0;
  }
  const base = args.value("url");
  const integration = args.value("integration");
  const secretFile = args.value("secret-file");
  if (!base || !integration || !secretFile) throw new UsageError(HOOK_USAGE);
  const secret = readFileSync(secretFile, "utf8").trim();
  const target = `${base.replace(/\/+$/, "")}/v1/integrations/forge/codehost/${encodeURIComponent(integration)}/webhook`;
  const url = repositoryUrl();
  let failed = 0;
  for (const line of stdin.split("\n")) {
    const [oldSha = "", newSha = "", ref = ""] = line.trim().split(/\s+/);
    // Tags and deleted branches build nothing: they are not sent.
    if (!ref.startsWith("refs/heads/") || ZERO.test(newSha)) continue;
    const body = payloadOf(oldSha, newSha, ref, url);
    try {
      const res = await fetch(target, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "push",
          "x-github-delivery": randomUUID(),
          "x-hub-signature-256": await sign(secret, body),
        },
        body,
        signal: AbortSignal.timeout(15_000),
      });
      const text = await res.text();
      if (!res.ok) {
        failed++;
        console.error(`slipway: ${ref} was not sent (${res.status}): ${text}`);
        continue;
      }
      const answer = JSON.parse(text) as {
        deployments?: { name: string; revision_id: string | null; skipped: string | null }[];
      };
      for (const d of answer.deployments ?? []) {
        console.error(
          `slipway: ${d.name}: ${d.revision_id ? `building revision ${d.revision_id}` : `skipped (${d.skipped})`}`,
        );
      }
    } catch (err) {
      failed++;
      console.error(`slipway: ${ref} was not sent: ${(err as Error).message}`);
    }
  }
  return failed === 0 ? 0 : 1;
}
