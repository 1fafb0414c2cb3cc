// How client commands print: tables on a terminal, JSON with --json, a spinner only on a TTY,
// errors as the server's `detail` (never a stack), and the exit codes.
import { SlipwayError } from "../sdk/client.ts";
import { UsageError } from "./args.ts";

export const EXIT = {
  ok: 0,
  deploymentFailed: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  conflict: 5,
  unreachable: 6,
} as const;

/** Exits with a code once the command has printed what it had to say. */
export class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof ExitCode) return err.code;
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof SlipwayError) {
    if (err.status === 0) return EXIT.unreachable;
    if (err.status === 401 || err.status === 403) return EXIT.auth;
    if (err.status === 404) return EXIT.notFound;
    if (err.status === 409 || err.status === 412) return EXIT.conflict;
    if (err.status === 400 || err.status === 422) return EXIT.usage;
  }
  return 1;
}

export class Output {
  readonly json: boolean;
  readonly tty: boolean;
  private spinnerTimer: NodeJS.Timeout | undefined;
  private spinnerText = "";
  private frame = 0;

  constructor(json: boolean, tty = Boolean(process.stdout.isTTY)) {
    this.json = json;
    this.tty = tty && !json;
  }

  /** A human line (stdout); nothing in JSON mode. */
  line(text: string): void {
    if (this.json) return;
    this.clearSpinner();
    process.stdout.write(`${text}\n`);
    this.drawSpinner();
  }

  /** One JSON value a line. */
  event(value: unknown): void {
    if (this.json) process.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** A result: JSON as is, or rows as a table. */
  result(value: unknown, table?: { rows: Record<string, unknown>[]; columns: string[] }): void {
    if (this.json) {
      process.stdout.write(`${JSON.stringify(value)}\n`);
      return;
    }
    if (table) this.table(table.rows, table.columns);
    else process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);
  }

  table(rows: Record<string, unknown>[], columns: string[]): void {
    const cell = (v: unknown) =>
      v === null || v === undefined ? "-" : typeof v === "object" ? JSON.stringify(v) : String(v);
    const cells = rows.map((r) => columns.map((c) => cell(r[c])));
    const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? "").length)));
    const fmt = (r: string[]) =>
      r
        .map((v, i) => v.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd();
    const lines = [fmt(columns.map((c) => c.toUpperCase())), ...cells.map(fmt)];
    if (!rows.length) lines.push("(none)");
    process.stdout.write(`${lines.join("\n")}\n`);
  }

  error(err: unknown): void {
    this.stopSpinner();
    if (err instanceof ExitCode) return;
    const message =
      err instanceof SlipwayError || err instanceof UsageError
        ? err.message
        : `Unexpected error: ${err instanceof Error ? err.message : String(err)}`;
    if (this.json) {
      const status = err instanceof SlipwayError ? err.status : undefined;
      process.stdout.write(`${JSON.stringify({ event: "error", status, detail: message })}\n`);
    }
    process.stderr.write(`Error: ${message}\n`);
  }

  /** A one-line spinner on stderr, only on a terminal. */
  spin(text: string): void {
    if (!this.tty) return;
    this.spinnerText = text;
    this.spinnerTimer ??= setInterval(() => {
      this.frame++;
      this.drawSpinner();
    }, 100);
    this.drawSpinner();
  }

  stopSpinner(): void {
    if (this.spinnerTimer) clearInterval(this.spinnerTimer);
    this.spinnerTimer = undefined;
    this.clearSpinner();
  }

  private drawSpinner(): void {
    if (!this.spinnerTimer) return;
    const frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
    process.stderr.write(`\r\x1b[K${frames[this.frame % frames.length]} ${this.spinnerText}`);
  }

  private clearSpinner(): void {
    if (this.spinnerTimer) process.stderr.write("\r\x1b[K");
  }
}
