// The client commands of `slipway` (everything but serve/migrate/keys rotate): dispatch, help,
// and one place that turns failures into the exit codes.
import type { FlagSpec } from "./args.ts";
import { accountFlags, keys, login, logout, workspaces } from "./commands/account.ts";
import { deploy, deployFlags } from "./commands/deploy.ts";
import {
  deploymentFlags,
  interrupt,
  logs,
  ls,
  open,
  remove,
  revisions,
  rollback,
  status,
} from "./commands/deployments.ts";
import { listeners, providerFlags, providers } from "./commands/providers.ts";
import { secrets } from "./commands/secrets.ts";
import { type Context, makeContext } from "./context.ts";
import { exitCodeOf } from "./output.ts";

export const CLIENT_USAGE = `Client commands (talk to a Slipway server over its HTTP API):
  login --url URL [--api-key KEY] [--profile P] [--workspace ID]   store a profile
  logout [--profile P]
  deploy [DIR] [--name N] [--config slipway.json] [--image URI | --repo URL --ref REF --integration ID
         | --template T] [--secret NAME=VALUE]… [--env-file F] [--no-wait]
  ls [--status S] [--name-contains T]      status NAME      revisions NAME
  logs NAME [-f] [--build] [--revision R] [--since ISO]
  rollback NAME [REVISION] [--no-wait]     interrupt NAME   open NAME   delete NAME [--yes]
  secrets list|set|unset NAME [NAME=VALUE… | KEY…]
  providers list|get|create|delete         listeners list
  keys list|create|revoke                  workspaces list|create

Global options: --json (one JSON value a line) --no-input (never prompt) --profile P --workspace ID
  --url URL --api-key KEY. SLIPWAY_URL, SLIPWAY_API_KEY and SLIPWAY_PROFILE override the profile.
Exit codes: 0 ok, 1 deployment failed, 2 usage, 3 authentication or permission, 4 not found,
  5 conflict, 6 server unreachable.`;

interface Command {
  flags: FlagSpec;
  run: (ctx: Context) => Promise<void>;
}

const COMMANDS: Record<string, Command> = {
  login: { flags: {}, run: login },
  logout: { flags: {}, run: logout },
  deploy: { flags: deployFlags, run: deploy },
  ls: { flags: deploymentFlags, run: ls },
  status: { flags: deploymentFlags, run: status },
  logs: { flags: deploymentFlags, run: logs },
  revisions: { flags: deploymentFlags, run: revisions },
  rollback: { flags: deploymentFlags, run: rollback },
  interrupt: { flags: deploymentFlags, run: interrupt },
  open: { flags: deploymentFlags, run: open },
  delete: { flags: deploymentFlags, run: remove },
  secrets: { flags: {}, run: secrets },
  providers: { flags: providerFlags, run: providers },
  listeners: { flags: {}, run: listeners },
  keys: { flags: accountFlags, run: keys },
  workspaces: { flags: {}, run: workspaces },
};

export const isClientCommand = (name: string): boolean => Object.hasOwn(COMMANDS, name);

/** Runs a client command; resolves with the process exit code. */
export async function runClient(name: string, argv: string[]): Promise<number> {
  const command = COMMANDS[name];
  if (!command) return 2;
  let ctx: Context | undefined;
  try {
    ctx = makeContext(argv, command.flags);
    if (ctx.args.bool("help")) {
      console.log(CLIENT_USAGE);
      return 0;
    }
    await command.run(ctx);
    return 0;
  } catch (err) {
    if (ctx) ctx.out.error(err);
    else process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    return exitCodeOf(err);
  }
}
