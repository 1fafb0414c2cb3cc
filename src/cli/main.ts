// The `slipway` command: server commands in serve.ts (their modules load only for them, so client
// commands start quickly), client commands in client.ts; --help, --version, "did you mean".
import { UsageError, wantsHelp } from "./args.ts";
import { CLIENT_COMMANDS, clientDoc, isClientCommand, runClient } from "./client.ts";
import { type CommandDoc, commandHelp, generalHelp, SERVER_DOCS } from "./help.ts";
import { ConfigError, listener, migrateOnly, restore, rotate, serve } from "./serve.ts";
import { describeStartupError } from "./startup-errors.ts";
import { closest } from "./suggest.ts";
import { packageVersion } from "./version.ts";

async function hook(args: string[]): Promise<void> {
  const { HOOK_USAGE, postReceive } = await import("./hook.ts");
  if (args[0] !== "post-receive") {
    // `slipway hook --help` asks for this; anything else is a mistake.
    const help = wantsHelp(args);
    (help ? process.stdout : process.stderr).write(`${HOOK_USAGE}\n`);
    process.exitCode = help ? 0 : 2;
    return;
  }
  const chunks: Buffer[] = [];
  if (!process.stdin.isTTY && !wantsHelp(args)) for await (const c of process.stdin) chunks.push(c as Buffer);
  try {
    process.exitCode = await postReceive(args.slice(1), Buffer.concat(chunks).toString("utf8"));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(err.message);
    process.exitCode = 2;
  }
}

/** The options each server command takes (the rest take none). */
const SERVER_FLAGS: Record<string, string[]> = {
  "keys rotate": ["--new"],
  migrate: ["--check"],
  restore: ["--force"],
};
/** Server commands that take one word besides their options: `restore FILE`. */
const TAKES_FILE = new Set(["restore"]);

/** A server command's own help, or a usage error for arguments it does not take. */
function serverCommand(name: string, args: string[], run: () => Promise<void>): Promise<void> {
  const doc = SERVER_DOCS[name] as CommandDoc;
  if (wantsHelp(args)) {
    process.stdout.write(`${commandHelp(doc, false)}\n`);
    return Promise.resolve();
  }
  const known = SERVER_FLAGS[name] ?? [];
  const file = TAKES_FILE.has(name) ? args.find((a) => !a.startsWith("-")) : undefined;
  const extra = args.find((a) => !known.includes(a) && a !== file);
  if (extra !== undefined) {
    const guess = extra.startsWith("--")
      ? closest(
          extra.slice(2),
          known.map((k) => k.slice(2)),
        )
      : undefined;
    throw new UsageError(
      `slipway ${name} takes ${known.length ? `only ${known.join(" ")}` : "no arguments"} (it is configured by the environment), not ${JSON.stringify(extra)}.${guess ? ` Did you mean --${guess}?` : ""}`,
    );
  }
  return run();
}

/** Options every client command takes, accepted before the command too (`slipway --json ls`). */
const GLOBAL_BOOLEANS = ["--json", "--no-input"];
const GLOBAL_VALUES = ["--profile", "--workspace", "--url", "--api-key"];
const ALL_COMMANDS = [
  ...CLIENT_COMMANDS,
  "serve",
  "migrate",
  "restore",
  "listener",
  "hook",
  "help",
  "version",
];

/** Quiet on a closed pipe (`slipway logs app | head -1`): the reader has what it wanted. */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(0);
      throw err;
    });
  }
}

async function main(argv: string[]): Promise<void> {
  const globals: string[] = [];
  let i = 0;
  for (; i < argv.length && (argv[i] ?? "").startsWith("-"); i++) {
    const arg = argv[i] ?? "";
    const flag = arg.replace(/=.*$/s, "");
    if (arg === "--version" || arg === "-v") {
      quietOnClosedPipe();
      console.log(packageVersion());
      return;
    }
    if (arg === "--help" || arg === "-h") break;
    if (GLOBAL_BOOLEANS.includes(arg)) globals.push(arg);
    else if (GLOBAL_VALUES.includes(flag)) {
      globals.push(arg);
      if (flag === arg && argv[i + 1] !== undefined) globals.push(argv[++i] ?? "");
    } else {
      const guess = closest(flag.replace(/^-+/, ""), [
        ...[...GLOBAL_BOOLEANS, ...GLOBAL_VALUES].map((g) => g.slice(2)),
        "help",
        "version",
      ]);
      throw new UsageError(
        `Unknown option ${flag}.${guess ? ` Did you mean --${guess}?` : ""} Run \`slipway --help\` for the commands and options.`,
      );
    }
  }
  const [command, ...rest] = argv.slice(i);
  const clientArgs = [...globals, ...rest];
  switch (command) {
    case "serve":
      return serverCommand("serve", rest, serve);
    case "migrate":
      return serverCommand("migrate", rest, () => migrateOnly(rest));
    case "restore":
      return serverCommand("restore", rest, () => restore(rest));
    case "listener":
      return listener(rest);
    case "hook":
      return hook(rest);
    case "keys":
      if (rest[0] === "rotate")
        return serverCommand("keys rotate", rest.slice(1), () => rotate(rest.slice(1)));
      break;
    case "version":
      quietOnClosedPipe();
      console.log(packageVersion());
      return;
    case undefined:
    case "help":
    case "--help":
    case "-h": {
      quietOnClosedPipe();
      const topic = command === "help" ? rest[0] : undefined;
      const doc = topic === undefined ? undefined : (clientDoc(topic) ?? SERVER_DOCS[topic]);
      if (topic !== undefined && !doc) throw unknownCommand(topic);
      console.log(topic && doc ? commandHelp(doc, isClientCommand(topic)) : generalHelp());
      return;
    }
  }
  if (command && isClientCommand(command)) {
    quietOnClosedPipe();
    process.exitCode = await runClient(command, clientArgs);
    return;
  }
  throw unknownCommand(command ?? "");
}

function unknownCommand(name: string): UsageError {
  const guess = closest(name, ALL_COMMANDS);
  return new UsageError(
    `Unknown command ${JSON.stringify(name)}.${guess ? ` Did you mean ${JSON.stringify(guess)}?` : ""}\nRun \`slipway --help\` for the list of commands.`,
  );
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof UsageError) {
    console.error(err.message);
    process.exit(2);
  }
  const startup = describeStartupError(err, process.env.DATABASE_URL);
  if (startup) console.error(`Error: ${startup}`);
  else if (err instanceof ConfigError) console.error(`Configuration error: ${err.message}`);
  else console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
