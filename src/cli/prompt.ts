// Asking at a terminal: a visible answer (readline), or a secret one read in raw mode so the
// terminal does not echo it (an API key must not stay on screen or in a recording).
import { createInterface } from "node:readline/promises";
import { Interrupted } from "./output.ts";

/** The parts of a TTY input stream the hidden reader uses (process.stdin, or a test's stand-in). */
export interface KeyInput extends NodeJS.EventEmitter {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
  isRaw?: boolean;
  setEncoding(encoding: BufferEncoding): unknown;
  resume(): unknown;
  pause(): unknown;
}

export interface TextOutput {
  write(text: string): unknown;
}

/** A visible one-line answer, trimmed. */
export async function ask(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(question)).trim();
  } finally {
    rl.close();
  }
}

/**
 * Reads a line without echoing it: Enter ends it, Backspace removes the last character, Ctrl-U the
 * whole line, Ctrl-C rejects with {@link Interrupted}, Ctrl-D on an empty line ends with "". Pasted
 * text arrives in one chunk and is taken whole. The terminal's mode is restored however it ends.
 */
export function askHidden(
  question: string,
  input: KeyInput = process.stdin,
  output: TextOutput = process.stderr,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const wasRaw = input.isRaw ?? false;
    let answer = "";
    // Inside an escape sequence (arrow keys, function keys): none of it is part of the answer.
    let inEscape: "none" | "started" | "sequence" = "none";
    const finish = (err?: Error) => {
      input.off("data", onData);
      input.off("end", onEnd);
      input.setRawMode?.(wasRaw);
      input.pause();
      output.write("\n");
      if (err) reject(err);
      else resolve(answer.trim());
    };
    const onEnd = () => finish();
    const onData = (chunk: string | Buffer) => {
      for (const ch of typeof chunk === "string" ? chunk : chunk.toString("utf8")) {
        if (inEscape === "started") {
          inEscape = ch === "[" || ch === "O" ? "sequence" : "none";
          continue;
        }
        if (inEscape === "sequence") {
          if (ch >= "@" && ch <= "~") inEscape = "none";
          continue;
        }
        if (ch === "\r" || ch === "\n") return finish();
        if (ch === "\u0003") return finish(new Interrupted());
        if (ch === "\u0004") {
          if (answer === "") return finish();
        } else if (ch === "\u007f" || ch === "\b") {
          // One character, not one UTF-16 unit: a key may be outside the BMP.
          answer = Array.from(answer).slice(0, -1).join("");
        } else if (ch === "\u0015") {
          answer = "";
        } else if (ch === "\u001b") {
          inEscape = "started";
        } else if (ch >= " ") {
          answer += ch;
        }
      }
    };
    // Raw mode first: a key typed as soon as the question shows must not be echoed by the terminal.
    input.setRawMode?.(true);
    output.write(question);
    input.setEncoding("utf8");
    input.on("data", onData);
    input.on("end", onEnd);
    input.resume();
  });
}
