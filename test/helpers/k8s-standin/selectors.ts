// Label and field selectors as the API server parses them (equality, set and existence forms).
type Test = (labels: Record<string, string>) => boolean;

export class SelectorError extends Error {}

/** Splits on commas outside parentheses ("a in (x,y),b" → two terms). */
function terms(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of selector) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter(Boolean);
}

function term(t: string): Test {
  let m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(t);
  if (m) {
    const [, k = "", op, list = ""] = m;
    const values = list.split(",").map((v) => v.trim());
    return op === "in"
      ? (l) => l[k] !== undefined && values.includes(l[k] ?? "")
      : (l) => l[k] === undefined || !values.includes(l[k] ?? "");
  }
  m = /^([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)$/.exec(t);
  if (m) {
    const [, k = "", op, v = ""] = m;
    return op === "!=" ? (l) => l[k] !== v : (l) => l[k] === v;
  }
  m = /^(!?)([\w./-]+)$/.exec(t);
  if (m) {
    const [, not, k = ""] = m;
    return not ? (l) => l[k] === undefined : (l) => l[k] !== undefined;
  }
  throw new SelectorError(`unable to parse requirement: ${JSON.stringify(t)}`);
}

export function parseSelector(selector: string | null): Test {
  if (!selector) return () => true;
  const tests = terms(selector).map(term);
  return (labels) => tests.every((t) => t(labels));
}
