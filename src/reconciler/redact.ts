export const REDACTED = "[redacted]";

/** Below this many characters a base64 fragment is too common to hide without hiding other text. */
const MIN_BASE64_NEEDLE = 6;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The characters of `value`'s base64 that do not depend on its neighbours, when it sits `offset`
 * bytes (0, 1 or 2) into a longer encoded text (a Basic auth header, a JSON blob): a character
 * carries 6 bits, so only those whose bits all fall inside the value are its own.
 */
function base64Cores(value: string, offset: number): string[] {
  const bytes = Buffer.concat([Buffer.alloc(offset), Buffer.from(value, "utf8")]);
  const first = Math.ceil((offset * 8) / 6);
  const last = Math.floor((bytes.length * 8) / 6);
  const out: string[] = [];
  for (const encoding of ["base64", "base64url"] as const) {
    const core = bytes.toString(encoding).slice(first, last);
    if (core.length >= MIN_BASE64_NEEDLE) out.push(core);
  }
  return out;
}

/** One regular expression that matches any of `needles`, longest first (a secret inside another is hidden whole). */
function alternation(needles: Set<string>, flags: string): RegExp | undefined {
  if (needles.size === 0) return undefined;
  const ordered = [...needles].sort((a, b) => b.length - a.length).map(escapeRegExp);
  return new RegExp(ordered.join("|"), flags);
}

/**
 * Replaces every occurrence of any secret value in a line, in the forms a program prints it: as it
 * is in any letter case (an upper-cased token), URL-encoded (inside DATABASE_URI), and base64 or
 * base64url encoded, alone or inside a longer encoded text.
 */
export function redactor(secrets: Iterable<string>): (line: string) => string {
  const anyCase = new Set<string>();
  const exact = new Set<string>();
  for (const s of secrets) {
    if (s === "") continue;
    anyCase.add(s);
    const encoded = encodeURIComponent(s);
    if (encoded !== s) anyCase.add(encoded);
    for (const offset of [0, 1, 2]) for (const core of base64Cores(s, offset)) exact.add(core);
  }
  const plain = alternation(anyCase, "gi");
  const base64 = alternation(exact, "g");
  if (!plain) return (line) => line;
  return (line) => {
    const out = line.replace(plain, REDACTED);
    return base64 ? out.replace(base64, REDACTED) : out;
  };
}
