// Argument parsing for the client commands: `--flag value`, `--flag=value`, repeatable flags,
// booleans, positionals. A bad command line is a UsageError (exit 2).
import { closest } from "./suggest.ts";

/** A bad command line (exit 2). `showUsage`: the command's usage line helps (a missing or unknown argument). */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly showUsage = false,
  ) {
    super(message);
  }
}

export interface FlagSpec {
  /** Flags that take no value. */
  booleans?: string[];
  /** Flags that take a value (may repeat). */
  values?: string[];
  /** Short aliases, e.g. { f: "follow" }. */
  aliases?: Record<string, string>;
}

/** Global flags every client command accepts. */
const GLOBAL: Required<FlagSpec> = {
  booleans: ["json", "no-input", "help"],
  values: ["profile", "workspace", "url", "api-key"],
  aliases: { h: "help" },
};

export interface Parsed {
  positionals: string[];
  flags: Map<string, string[]>;
  bool(name: string): boolean;
  /** The last value given for a flag. */
  value(name: string): string | undefined;
  values(name: string): string[];
}

/** Whether the command line asks for help (`-h` or `--help` before any `--`), whatever else it says. */
export function wantsHelp(argv: string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === "-h" || a === "--help");
}

function unknownOption(arg: string, known: Iterable<string>): UsageError {
  const name = /^--?([^=]*)/.exec(arg)?.[1] ?? "";
  const guess = name.length > 1 ? closest(name, known) : undefined;
  const flag = arg.replace(/=.*$/s, "");
  return new UsageError(`Unknown option ${flag}.${guess ? ` Did you mean --${guess}?` : ""}`, true);
}

/** A missing or unknown sub-command (`secrets lst`), with the closest known one when there is one. */
export function actionError(action: string | undefined, actions: string[]): UsageError {
  if (!action) return new UsageError(`Give an action: ${actions.join(", ")}.`, true);
  const guess = closest(action, actions);
  return new UsageError(
    `Unknown action ${JSON.stringify(action)}.${guess ? ` Did you mean "${guess}"?` : ""}`,
    true,
  );
}

export function parseArgs(argv: string[], spec: FlagSpec): Parsed {
  const booleans = new Set([...GLOBAL.booleans, ...(spec.booleans ?? [])]);
  const valued = new Set([...GLOBAL.values, ...(spec.values ?? [])]);
  const aliases = { ...GLOBAL.aliases, ...spec.aliases };
  const flags = new Map<string, string[]>();
  const positionals: string[] = [];
  const add = (name: string, v: string) => flags.set(name, [...(flags.get(name) ?? []), v]);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    const long = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(arg);
    const short = /^-([a-zA-Z])$/.exec(arg);
    if (!long && !short) {
      if (arg.startsWith("-") && arg !== "-") throw unknownOption(arg, [...booleans, ...valued]);
      positionals.push(arg);
      continue;
    }
    const name = long ? (long[1] ?? "") : (aliases[short?.[1] ?? ""] ?? "");
    if (booleans.has(name)) {
      if (long?.[2] !== undefined) throw new UsageError(`--${name} takes no value.`, true);
      add(name, "true");
    } else if (valued.has(name)) {
      const v = long?.[2] ?? argv[++i];
      if (v === undefined) throw new UsageError(`--${name} needs a value.`, true);
      add(name, v);
    } else {
      throw unknownOption(arg, [...booleans, ...valued]);
    }
  }
  return {
    positionals,
    flags,
    bool: (n) => flags.has(n),
    value: (n) => flags.get(n)?.at(-1),
    values: (n) => flags.get(n) ?? [],
  };
}

/** NAME=VALUE pairs (secrets, env files). */
export function parseAssignment(text: string, what: string): { name: string; value: string } {
  const eq = text.indexOf("=");
  const name = eq > 0 ? text.slice(0, eq).trim() : "";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new UsageError(`${what} must be NAME=VALUE, got ${JSON.stringify(text)}.`);
  return { name, value: text.slice(eq + 1) };
}

/** A dotenv file: NAME=VALUE lines, `#` comments, optional `export `, values optionally quoted. */
export function parseEnvFile(text: string, file: string): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const [n, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const { name, value } = parseAssignment(line.replace(/^export\s+/, ""), `${file} line ${n + 1}`);
    const v = value.trim();
    const quoted = /^(["'])(.*)\1$/s.exec(v);
    out.push({ name, value: quoted ? (quoted[2] ?? "") : v });
  }
  return out;
}
