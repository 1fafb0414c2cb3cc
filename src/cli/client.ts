// The client commands of `slipway` (everything but serve/migrate/keys rotate/listener/hook):
// dispatch, per-command help, and one place that turns failures into the exit codes.
import { type FlagSpec, UsageError, wantsHelp } from "./args.ts";
import {
  accountFlags,
  keys,
  login,
  loginFlags,
  logout,
  logoutFlags,
  workspaces,
} from "./commands/account.ts";
import { backup, backupFlags } from "./commands/backup.ts";
import { deploy, deployFlags } from "./commands/deploy.ts";
import {
  deleteFlags,
  ls,
  lsFlags,
  nameOnlyFlags,
  open,
  remove,
  revisions,
  status,
} from "./commands/deployments.ts";
import { domains } from "./commands/domains.ts";
import { logs, logsFlags } from "./commands/logs.ts";
import { listeners, providerFlags, providers } from "./commands/providers.ts";
import { interrupt, interruptFlags, rollback, rollbackFlags } from "./commands/rollback.ts";
import { secrets } from "./commands/secrets.ts";
import { tokenFlags, tokens } from "./commands/tokens.ts";
import { type Context, makeContext } from "./context.ts";
import { CLIENT_DOCS, type CommandDoc, commandHelp, SERVER_DOCS } from "./help.ts";
import { EXIT, exitCodeOf, Output } from "./output.ts";

interface Command {
  flags: FlagSpec;
  run: (ctx: Context) => Promise<void>;
}

const COMMANDS: Record<string, Command> = {
  login: { flags: loginFlags, run: login },
  logout: { flags: logoutFlags, run: logout },
  deploy: { flags: deployFlags, run: deploy },
  ls: { flags: lsFlags, run: ls },
  status: { flags: nameOnlyFlags, run: status },
  revisions: { flags: nameOnlyFlags, run: revisions },
  logs: { flags: logsFlags, run: logs },
  rollback: { flags: rollbackFlags, run: rollback },
  interrupt: { flags: interruptFlags, run: interrupt },
  open: { flags: nameOnlyFlags, run: open },
  delete: { flags: deleteFlags, run: remove },
  secrets: { flags: {}, run: secrets },
  domains: { flags: {}, run: domains },
  providers: { flags: providerFlags, run: providers },
  listeners: { flags: {}, run: listeners },
  tokens: { flags: tokenFlags, run: tokens },
  keys: { flags: accountFlags, run: keys },
  workspaces: { flags: {}, run: workspaces },
  backup: { flags: backupFlags, run: backup },
};

export const CLIENT_COMMANDS: readonly string[] = Object.keys(COMMANDS);

export const isClientCommand = (name: string): boolean => Object.hasOwn(COMMANDS, name);

/** The doc of a client command; `keys` also lists the server's `keys rotate`. */
export function clientDoc(name: string): CommandDoc | undefined {
  const doc = CLIENT_DOCS[name];
  const rotate = SERVER_DOCS["keys rotate"];
  if (name === "keys" && doc && rotate) return { ...doc, usage: [...doc.usage, ...rotate.usage] };
  return doc;
}

/** Runs a client command; resolves with the process exit code. */
export async function runClient(name: string, argv: string[]): Promise<number> {
  const command = COMMANDS[name];
  const doc = clientDoc(name);
  if (!command || !doc) return EXIT.usage;
  // Help wins over everything else on the line, even arguments that would not parse.
  if (wantsHelp(argv)) {
    process.stdout.write(`${commandHelp(doc)}\n`);
    return EXIT.ok;
  }
  let ctx: Context | undefined;
  try {
    ctx = makeContext(name, argv, command.flags);
    await command.run(ctx);
    return EXIT.ok;
  } catch (err) {
    (ctx?.out ?? new Output(argv.includes("--json"))).error(err);
    if (err instanceof UsageError && err.showUsage) {
      const lines = doc.usage.map((u, i) => `${i ? "       " : "Usage: "}slipway ${u}`).join("\n");
      process.stderr.write(`${lines}\nRun \`slipway ${name} --help\` for its options.\n`);
    }
    return exitCodeOf(err);
  }
}
