// What `slipway --help` and `slipway <command> --help` print. The usage lines are the contract the
// docs/cli.md's command tables repeat word for word (test/cli/help.test.ts checks they agree).

export interface CommandDoc {
  /** One line per form of the command, without the leading `slipway `. */
  usage: string[];
  /** What it does, in one sentence. */
  summary: string;
  /** Its own options, as [flag, meaning]. */
  options?: [string, string][];
  /** Further paragraphs. */
  notes?: string;
}

const REV =
  "REV is a revision number (5 or #5, as `slipway revisions` numbers them), a unique id prefix of at least 6 characters, or the full id.";

export const CLIENT_DOCS: Record<string, CommandDoc> = {
  login: {
    usage: ["login --url URL [--api-key KEY] [--profile P] [--workspace ID]"],
    summary: "Check an API key against the server and store it as a profile (the current one from then on).",
    options: [
      ["--url URL", "the server's URL (or SLIPWAY_URL)"],
      ["--api-key KEY", "the key (or SLIPWAY_API_KEY); asked for, unechoed, on a terminal when missing"],
      ["--profile P", "the profile's name (default: default)"],
      ["--workspace ID", "the workspace the profile acts in (sent as X-Tenant-Id)"],
    ],
    notes: "Profiles live in $XDG_CONFIG_HOME/slipway/config.json (mode 0600).",
  },
  logout: {
    usage: ["logout [--profile P]"],
    summary: "Remove a stored profile (default: the current one).",
  },
  deploy: {
    usage: [
      "deploy [DIR] [--name N] [--config FILE] [--image URI | --repo URL [--ref REF] --integration ID | --template T] [--secret NAME=VALUE]… [--env-file F] [--no-wait]",
    ],
    summary:
      "Deploy DIR (default .), an image, a repository or a template: find the deployment by name or create it, send the source, wait for the new revision and print its URL.",
    options: [
      ["--name N", "the deployment (default: the directory's name)"],
      ["--config FILE", "the app's config, relative to the source (default: slipway.json)"],
      ["--image URI", "run this image (external_docker)"],
      ["--repo URL --integration ID", "build this repository through a code-host integration (codehost)"],
      ["--ref REF", "the branch, tag or commit of --repo (default: main)"],
      ["--template T", "deploy a built-in template, e.g. hello-http (internal_template)"],
      ["--secret NAME=VALUE", "a secret, laid over the stored ones (repeatable)"],
      ["--env-file F", "secrets from a dotenv file (repeatable; --secret wins)"],
      ["--no-wait", "return once the revision is queued"],
    ],
    notes:
      "DIR is uploaded without .git, node_modules, .slipway, .env and what its .slipwayignore (gitignore\n" +
      "syntax; .gitignore when there is none) leaves out. On a failure it prints the reason, the end of\n" +
      "the failed step's log and the command that shows all of it, and exits 1.",
  },
  ls: {
    usage: ["ls [--status S[,S…]] [--name-contains TEXT] [--limit N] [--offset N]"],
    summary: "List the workspace's deployments with the state of their latest revision.",
    options: [
      [
        "--status S[,S…]",
        "only these states: a deployment's (READY, UNUSED, …) or its latest revision's (DEPLOY_FAILED, BUILDING, …)",
      ],
      ["--name-contains TEXT", "only names containing TEXT"],
      ["--limit N", "at most N (1 to 100, default 100)"],
      ["--offset N", "skip the first N"],
    ],
  },
  status: {
    usage: ["status NAME"],
    summary: "Show a deployment: its status, its latest revision's state and message, its URL.",
  },
  revisions: {
    usage: ["revisions NAME"],
    summary: "List a deployment's revisions, newest first, numbered #1, #2, … in the order they were made.",
  },
  logs: {
    usage: ["logs NAME [-f] [--build] [--revision REV] [--since ISO]"],
    summary: "Print a revision's deploy log (the app's output), by default the active revision's.",
    options: [
      ["-f, --follow", "keep printing new lines; moves on to each newer revision that becomes active"],
      ["--build", "the build log instead"],
      ["--revision REV", "this revision (and only it, with -f)"],
      ["--since ISO", "only lines after this instant"],
    ],
    notes: REV,
  },
  rollback: {
    usage: ["rollback NAME [REV] [--no-wait]"],
    summary:
      "Redeploy revision REV (default: the newest DEPLOYED one before the active revision) and wait for it.",
    options: [["--no-wait", "return once the new revision is queued"]],
    notes: REV,
  },
  interrupt: {
    usage: ["interrupt NAME [--revision REV]"],
    summary: "Stop a revision that is still building or deploying (default: the latest one).",
    options: [["--revision REV", "this revision"]],
    notes: REV,
  },
  open: {
    usage: ["open NAME"],
    summary: "Print the deployment's URL and open it in a browser when at a terminal.",
  },
  delete: {
    usage: ["delete NAME [--yes]"],
    summary: "Delete a deployment and stop its app (asks to type the name, unless --yes).",
    options: [["-y, --yes", "do not ask (needed with --no-input or without a terminal)"]],
  },
  secrets: {
    usage: ["secrets list NAME", "secrets set NAME NAME=VALUE…", "secrets unset NAME KEY…"],
    summary:
      "List a deployment's secrets (values masked), or set or remove some: each change is a new revision.",
  },
  domains: {
    usage: ["domains add NAME HOST", "domains ls NAME", "domains rm NAME HOST"],
    summary:
      "Add, list or remove a deployment's custom domains; add prints the DNS TXT record that verifies one (docs/domains.md).",
  },
  providers: {
    usage: [
      "providers list",
      "providers get ID",
      "providers create --provider-id ID --name N --client-id C --auth-url URL --token-url URL [--client-secret S] [--pkce] [--provider-type T] [--token-endpoint-auth-method M]",
      "providers delete ID",
      "providers catalog [TEMPLATE]",
      "providers create --template T --provider-id ID --client-id C [--client-secret S] [--param NAME=VALUE…] [--api-base-url URL] [any field above, which wins]",
    ],
    summary:
      "Manage the organization's OAuth provider configurations; a catalog template fills in a provider's URLs and quirks (docs/oauth.md).",
  },
  tokens: {
    usage: ["tokens ls [--provider ID] [--user USER]", "tokens revoke TOKEN_ID [--user USER]"],
    summary:
      "List the stored OAuth tokens of your tenant (who holds one, scopes, expiry, last refresh, why one is broken), or revoke one at its provider and delete it.",
  },
  listeners: {
    usage: ["listeners list"],
    summary: "List the Kubernetes listeners of the workspace.",
  },
  keys: {
    usage: [
      "keys list",
      "keys create [--role admin|member|viewer] [--description D] [--workspace-id ID]",
      "keys revoke ID",
    ],
    summary: "Manage API keys (a new key is shown once).",
  },
  backup: {
    usage: ["backup --out FILE"],
    summary:
      "Download a backup of the server's whole database (a system admin key), check its checksum and keep it in FILE (docs/operations.md).",
  },
  workspaces: {
    usage: ["workspaces list", "workspaces create NAME"],
    summary: "List or create the organization's workspaces.",
  },
};

export const SERVER_DOCS: Record<string, CommandDoc> = {
  serve: {
    usage: ["serve"],
    summary:
      "Run the API server (what `npm start` runs); configured by the environment (docs/configuration.md).",
  },
  migrate: {
    usage: ["migrate [--check]"],
    summary:
      "Apply pending database migrations and exit; with --check apply nothing, list what is pending (exit 1 when something is) and what a newer release applied.",
  },
  restore: {
    usage: ["restore FILE [--force]"],
    summary:
      "Restore a backup (from `slipway backup`) into the empty data dir or the empty database of DATABASE_URL, with the server stopped; --force replaces what the target holds (docs/operations.md).",
  },
  "keys rotate": {
    usage: ["keys rotate [--new]"],
    summary:
      "Re-encrypt every stored secret under the active master key; with --new (embedded key file only) first generate a new active key.",
  },
  listener: {
    usage: ["listener --url URL --api-key KEY --listener-id ID [options]"],
    summary:
      "Run in (or beside) a Kubernetes cluster: apply what the control plane wants there and report back (`slipway listener --help`).",
  },
  hook: {
    usage: ["hook post-receive --url URL --integration ID --secret-file FILE"],
    summary:
      "From a git post-receive hook: send Slipway a signed push so local_git deployments build at once (`slipway hook post-receive --help`).",
  },
};

export const GLOBAL_OPTIONS = `Global options:
  --json            JSON instead of tables (deploy and rollback: one event a line)
  --no-input        never prompt
  --profile P       use stored profile P (or SLIPWAY_PROFILE; default: the current one)
  --workspace ID    act in this workspace (sent as X-Tenant-Id)
  --url URL         the server (or SLIPWAY_URL)
  --api-key KEY     the API key (or SLIPWAY_API_KEY)
  -h, --help        this help`;

export const EXIT_CODES = `Exit codes: 0 ok, 1 deployment failed, 2 usage (or a request the server refused as invalid,
  or an upload over its size limit), 3 authentication or permission, 4 not found, 5 conflict,
  6 server unreachable, 130 interrupted.`;

function optionLines(options: [string, string][]): string {
  const width = Math.max(...options.map(([f]) => f.length));
  return options.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`).join("\n");
}

/** `slipway <name> --help`: the command's usage lines, what it does, its options. */
export function commandHelp(doc: CommandDoc, global = true): string {
  const [first, ...rest] = doc.usage;
  const parts = [
    [`Usage: slipway ${first}`, ...rest.map((u) => `       slipway ${u}`)].join("\n"),
    doc.summary,
  ];
  if (doc.options?.length) parts.push(`Options:\n${optionLines(doc.options)}`);
  if (doc.notes) parts.push(doc.notes);
  if (global) parts.push(GLOBAL_OPTIONS);
  return parts.join("\n\n");
}

function listing(docs: Record<string, CommandDoc>): string {
  return Object.values(docs)
    .map((d) => `${d.usage.map((u) => `  ${u}`).join("\n")}\n      ${d.summary}`)
    .join("\n");
}

/** `slipway --help`. */
export function generalHelp(): string {
  return `Usage: slipway <command> [options]
Run \`slipway <command> --help\` for a command's options; \`slipway --version\` prints the version.

Client commands (talk to a Slipway server over its HTTP API):
${listing(CLIENT_DOCS)}

Server commands (configured by the environment: see docs/configuration.md):
${listing(SERVER_DOCS)}

${GLOBAL_OPTIONS}
  SLIPWAY_URL, SLIPWAY_API_KEY and SLIPWAY_PROFILE override the stored profile; NO_COLOR turns off colour.

${EXIT_CODES}`;
}
