import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { REPO_ROOT } from "./process.ts";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `slipway` bin (bin/slipway.mjs) as a child process and collects its output. */
export function runCli(args: string[], env: Record<string, string>, cwd = REPO_ROOT): Promise<CliResult> {
  const proc = spawn(process.execPath, [join(REPO_ROOT, "bin", "slipway.mjs"), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: env.HOME ?? "/nonexistent", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (c: Buffer) => {
    stdout += c.toString("utf8");
  });
  proc.stderr.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  return new Promise((resolve) => proc.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** A directory holding a dependency-free HTTP app and its slipway.json. */
export const APP_FILES = (version: string): Record<string, string> => ({
  "server.js": `const http = require("node:http");
http.createServer((req, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ version: ${JSON.stringify(version)}, greeting: process.env.GREETING ?? null }));
}).listen(Number(process.env.PORT), "127.0.0.1");
`,
  "slipway.json": JSON.stringify({ start: "node server.js", healthcheck: "/" }),
});

/** Shell-quotes one word for `sh -c`. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

export interface TerminalRun {
  /** Everything the terminal received (stdout and stderr together, with their escape codes). */
  output(): string;
  /** Resolves once the output matches `pattern`. */
  waitFor(pattern: RegExp): Promise<void>;
  /** Types into the terminal. */
  type(text: string): void;
  exited: Promise<number | null>;
}

/**
 * Runs the real `slipway` bin on a pseudo-terminal (util-linux `script`), 100 columns wide, so that
 * it sees a TTY on stdin, stdout and stderr as a person's shell gives it.
 */
export function runCliInTerminal(args: string[], env: Record<string, string>): TerminalRun {
  const command = [process.execPath, join(REPO_ROOT, "bin", "slipway.mjs"), ...args].map(quote).join(" ");
  const proc = spawn("script", ["-qefc", `stty cols 100 rows 40; exec ${command}`, "/dev/null"], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: env.HOME ?? "/nonexistent", TERM: "xterm", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  const waiters = new Set<() => void>();
  const onData = (c: Buffer) => {
    out += c.toString("utf8");
    for (const w of waiters) w();
  };
  proc.stdout.on("data", onData);
  proc.stderr.on("data", onData);
  const exited = new Promise<number | null>((resolve) => proc.on("close", (code) => resolve(code)));
  return {
    output: () => out,
    exited,
    type: (text) => proc.stdin.write(text),
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(out)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        exited.then(() => {
          if (waiters.delete(check)) reject(new Error(`exited before ${pattern}; output:\n${out}`));
        });
        check();
      }),
  };
}

/**
 * What a terminal `width` columns wide shows after `output`: carriage returns, line feeds, erase
 * to end of line (ESC [ K) and wrapping applied, colour codes dropped. The last line is where the
 * cursor stands.
 */
export function screenOf(output: string, width = 100): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  const line = () => {
    while (lines.length <= row) lines.push([]);
    return lines[row] ?? [];
  };
  for (let i = 0; i < output.length; i++) {
    const ch = output[i] ?? "";
    if (ch === "\x1b") {
      const m = /^\[([0-9;?]*)([A-Za-z])/.exec(output.slice(i + 1));
      if (m) {
        if (m[2] === "K") line().length = Math.min(line().length, col);
        i += m[0].length;
      }
      continue;
    }
    if (ch === "\r") col = 0;
    else if (ch === "\n") {
      row++;
      line();
    } else if (ch >= " ") {
      if (col >= width) {
        row++;
        col = 0;
      }
      const l = line();
      while (l.length < col) l.push(" ");
      l[col++] = ch;
    }
  }
  return lines.map((l) => l.join("").trimEnd());
}

/** Preloaded into the CLI by {@link lateTimersOptions}. */
const LATE_TIMERS = `import { promisify } from "node:util";

const late = [];
for (const name of ["setTimeout", "setInterval"]) {
  const real = globalThis[name];
  globalThis[name] = (fn, ms, ...args) => {
    if (typeof fn !== "function") return real(fn, ms, ...args);
    const timer = real((...a) => {
      if (timer.hasRef()) late.push(name + "(" + ms + ")");
      return fn(...a);
    }, ms, ...args);
    return timer;
  };
  globalThis[name][promisify.custom] = real[promisify.custom];
}
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (...args) => {
  late.length = 0;
  return write(...args);
};
process.on("exit", () => process.stderr.write("late timers: " + JSON.stringify(late) + "\\n"));
`;

/**
 * NODE_OPTIONS that make the CLI report on stderr at exit the timers that kept it alive (not
 * unref'd) and fired after its last write to stdout (`late timers: […]`): a command whose work is
 * done should exit then, not wait on a timer of its own.
 */
export function lateTimersOptions(): string {
  const file = join(mkdtempSync(join(tmpdir(), "slipway-late-timers-")), "late-timers.mjs");
  writeFileSync(file, LATE_TIMERS);
  return `--import ${pathToFileURL(file).href}`;
}
