// How client commands print: tables on a terminal, JSON with --json, a spinner and colour only on
// a terminal, errors as the server's `detail` (never a stack), and the exit codes.
import { SlipwayError } from "../sdk/client.ts";
import { DeployInputError } from "../sdk/deploy.ts";
import { UsageError } from "./args.ts";

export const EXIT = {
  ok: 0,
  deploymentFailed: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  conflict: 5,
  unreachable: 6,
  interrupted: 130,
} as const;

/** Exits with a code once the command has printed what it had to say. */
export class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Ctrl-C at a prompt (raw mode turns it into a key, not a signal). */
export class Interrupted extends Error {
  constructor() {
    super("Interrupted.");
  }
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof ExitCode) return err.code;
  if (err instanceof Interrupted) return EXIT.interrupted;
  if (err instanceof UsageError || err instanceof DeployInputError) return EXIT.usage;
  if (err instanceof SlipwayError) {
    if (err.status === 0) return EXIT.unreachable;
    if (err.status === 401 || err.status === 403) return EXIT.auth;
    if (err.status === 404) return EXIT.notFound;
    if (err.status === 409 || err.status === 412) return EXIT.conflict;
    // 413: an upload over the server's limit is the caller's to fix, like an invalid request.
    if (err.status === 400 || err.status === 413 || err.status === 422) return EXIT.usage;
  }
  return 1;
}

/** A state users should notice: a failed step, an interrupted revision, a data plane not answering. */
export const isFailureState = (state: string): boolean =>
  state.endsWith("_FAILED") || state === "INTERRUPTED" || state === "UNKNOWN";

/** Colour only for a terminal, never with NO_COLOR (https://no-color.org) or TERM=dumb. */
export function colourWanted(tty: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return tty && !env.NO_COLOR && env.TERM !== "dumb";
}

const red = (text: string) => `\x1b[31m${text}\x1b[39m`;

export interface TableOptions {
  /** Columns whose cells are states: failures are red on a terminal. */
  states?: string[];
}

export class Output {
  readonly json: boolean;
  /** Whether stdout is a terminal (and not --json): tables and colour for a person. */
  readonly tty: boolean;
  private readonly colour: boolean;
  private readonly errColour: boolean;
  private readonly spinnerOn: boolean;
  private spinnerTimer: NodeJS.Timeout | undefined;
  private spinnerText: () => string = () => "";
  private frame = 0;

  constructor(
    json: boolean,
    tty = Boolean(process.stdout.isTTY),
    errTty = Boolean(process.stderr.isTTY),
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.json = json;
    this.tty = tty && !json;
    this.colour = colourWanted(this.tty, env);
    // Never colour when stdout is not a terminal, even on a stderr that is (`deploy > log`).
    this.errColour = colourWanted(this.tty && errTty, env);
    // The spinner is drawn on stderr: only where a person watches it.
    this.spinnerOn = errTty && !json;
  }

  /** A human line (stdout); nothing in JSON mode. */
  line(text: string): void {
    if (this.json) return;
    this.clearSpinner();
    process.stdout.write(`${text}\n`);
    this.drawSpinner();
  }

  /** A human line on stderr (failures, notes), also in JSON mode; a leading state is red on a terminal. */
  note(text: string, state?: string): void {
    this.clearSpinner();
    const shown = state && this.errColour && isFailureState(state) ? text.replace(state, red(state)) : text;
    process.stderr.write(`${shown}\n`);
    this.drawSpinner();
  }

  /** One JSON value a line. */
  event(value: unknown): void {
    if (this.json) process.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** A result: JSON as is, or rows as a table. */
  result(
    value: unknown,
    table?: { rows: Record<string, unknown>[]; columns: string[] } & TableOptions,
  ): void {
    if (this.json) {
      process.stdout.write(`${JSON.stringify(value)}\n`);
      return;
    }
    if (table) this.table(table.rows, table.columns, table);
    else process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);
  }

  table(rows: Record<string, unknown>[], columns: string[], opts: TableOptions = {}): void {
    const cell = (v: unknown) =>
      v === null || v === undefined ? "-" : typeof v === "object" ? JSON.stringify(v) : String(v);
    const cells = rows.map((r) => columns.map((c) => cell(r[c])));
    const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? "").length)));
    const states = new Set(opts.states ?? []);
    // Padded first, painted after: escape codes take no room on screen.
    const paint = (v: string, i: number) => {
      const padded = v.padEnd(widths[i] ?? 0);
      const column = columns[i] ?? "";
      return this.colour && states.has(column) && isFailureState(v) ? red(padded) : padded;
    };
    const fmt = (r: string[], painted: boolean) =>
      r
        .map((v, i) => (painted ? paint(v, i) : v.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd();
    const lines = [
      fmt(
        columns.map((c) => c.toUpperCase().replace(/_/g, " ")),
        false,
      ),
      ...cells.map((r) => fmt(r, true)),
    ];
    if (!rows.length) lines.push("(none)");
    this.clearSpinner();
    process.stdout.write(`${lines.join("\n")}\n`);
    this.drawSpinner();
  }

  error(err: unknown): void {
    this.stopSpinner();
    if (err instanceof ExitCode) return;
    const known =
      err instanceof SlipwayError ||
      err instanceof UsageError ||
      err instanceof DeployInputError ||
      err instanceof Interrupted;
    const message = known
      ? err.message
      : `Unexpected error: ${err instanceof Error ? err.message : String(err)}`;
    if (this.json) {
      const status = err instanceof SlipwayError ? err.status : undefined;
      process.stdout.write(`${JSON.stringify({ event: "error", status, detail: message })}\n`);
    }
    process.stderr.write(`Error: ${message}\n`);
  }

  /** A one-line spinner on stderr, only on a terminal; `text` is read again at each frame. */
  spin(text: string | (() => string)): void {
    if (!this.spinnerOn) return;
    this.spinnerText = typeof text === "string" ? () => text : text;
    this.spinnerTimer ??= setInterval(() => {
      this.frame++;
      this.drawSpinner();
    }, 100);
    this.drawSpinner();
  }

  /** Stops the spinner and erases its line: the cursor is left at the start of a clean line. */
  stopSpinner(): void {
    this.clearSpinner();
    if (this.spinnerTimer) clearInterval(this.spinnerTimer);
    this.spinnerTimer = undefined;
  }

  private drawSpinner(): void {
    if (!this.spinnerTimer) return;
    const frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
    // Longer than the terminal is wide, it would wrap, and erasing one line would leave the rest.
    const room = Math.max(10, (process.stderr.columns || 80) - 3);
    const text = this.spinnerText();
    const shown = text.length > room ? `${text.slice(0, room - 1)}…` : text;
    process.stderr.write(`\r\x1b[K${frames[this.frame % frames.length]} ${shown}`);
  }

  private clearSpinner(): void {
    if (this.spinnerTimer) process.stderr.write("\r\x1b[K");
  }
}
