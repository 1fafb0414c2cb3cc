export const REDACTED = "[redacted]";

/**
 * Replaces every occurrence of any secret value in a line. Longer values go first so a secret that
 * contains another is hidden whole; values also appear URL-encoded (inside DATABASE_URI).
 */
export function redactor(secrets: Iterable<string>): (line: string) => string {
  const needles = new Set<string>();
  for (const s of secrets) {
    if (s === "") continue;
    needles.add(s);
    const encoded = encodeURIComponent(s);
    if (encoded !== s) needles.add(encoded);
  }
  const ordered = [...needles].sort((a, b) => b.length - a.length);
  if (ordered.length === 0) return (line) => line;
  return (line) => {
    let out = line;
    for (const n of ordered) out = out.split(n).join(REDACTED);
    return out;
  };
}
