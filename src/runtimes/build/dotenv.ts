/** One assignment of a dotenv file, with the line it starts on (for messages that must not echo values). */
export interface DotenvEntry {
  name: string;
  value: string;
  line: number;
}

export interface DotenvParse {
  /** In file order; a later assignment of a name wins, as with dotenv. */
  entries: DotenvEntry[];
  /** Lines that are neither assignments, comments nor blank: dotenv skips them, and so do we. */
  skipped: number[];
}

/** `[export ]NAME=` or `NAME: ` at a line's start; dotenv's names allow `.` and `-`. */
const ASSIGNMENT = /^[ \t]*(?:export[ \t]+)?([\w.-]+)(?:[ \t]*=[ \t]*|:[ \t]+)/;
const QUOTES = new Set(["'", '"', "`"]);

/** Where `quote` closes after `from` (a backslash-escaped one does not close), or -1. */
function closingQuote(text: string, from: number, quote: string): number {
  for (let i = from; i < text.length; i++) {
    if (text[i] === "\\" && text[i + 1] === quote) i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}

/**
 * Parses a dotenv file as the `dotenv` package (v16) does: `KEY=value`, `export KEY=value`, `#`
 * comments and blank lines; single and backtick quotes keep their text literally, double quotes
 * turn `\n` and `\r` into line breaks; quoted values may span lines; an unquoted value ends at `#`
 * and is trimmed. Written here rather than depended on: a few dozen lines, and no package in a build.
 */
export function parseDotenv(source: string): DotenvParse {
  const text = source.replace(/\r\n?/g, "\n");
  const entries: DotenvEntry[] = [];
  const skipped: number[] = [];
  let pos = 0;
  let line = 1;
  while (pos < text.length) {
    const eol = text.indexOf("\n", pos);
    const end = eol === -1 ? text.length : eol;
    const current = text.slice(pos, end);
    const startLine = line;
    let next = end + 1;
    const m = ASSIGNMENT.exec(current);
    if (m === null) {
      const trimmed = current.trim();
      if (trimmed !== "" && !trimmed.startsWith("#")) skipped.push(startLine);
    } else {
      const valueStart = pos + m[0].length;
      const first = text[valueStart] ?? "";
      let value: string | undefined;
      if (QUOTES.has(first)) {
        const close = closingQuote(text, valueStart + 1, first);
        if (close !== -1) {
          const restEnd = text.indexOf("\n", close);
          const rest = text.slice(close + 1, restEnd === -1 ? text.length : restEnd);
          // Only a comment may follow the closing quote; otherwise dotenv reads the line unquoted.
          if (/^[ \t]*(?:#.*)?$/.test(rest)) {
            value = text.slice(valueStart + 1, close);
            if (first === '"') value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
            next = restEnd === -1 ? text.length : restEnd + 1;
          }
        }
      }
      if (value === undefined) {
        const hash = current.indexOf("#", m[0].length);
        value = current.slice(m[0].length, hash === -1 ? undefined : hash).trim();
      }
      entries.push({ name: m[1] ?? "", value, line: startLine });
    }
    line += (text.slice(pos, next).match(/\n/g) ?? []).length;
    pos = next;
  }
  return { entries, skipped };
}
