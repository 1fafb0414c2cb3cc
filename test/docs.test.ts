import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";
import { REPO_ROOT } from "./helpers/process.ts";

/*
 * The README and docs/ against the repository: every relative link (and its anchor) leads
 * somewhere, every source path they name exists, and the configuration page names every setting
 * the server reads, with its default. (The command table is checked by test/cli/help.test.ts, the
 * resource spec's fields by the resource-fields test, the post-receive snippet by the
 * integrations' push test.)
 */

const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");

/** src/config.ts, and the files of a src/config/ folder should it become one. */
function configSource(): string {
  const dir = join(REPO_ROOT, "src", "config");
  const files = existsSync(join(REPO_ROOT, "src", "config.ts")) ? ["src/config.ts"] : [];
  if (existsSync(dir)) {
    for (const f of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
      if (f.endsWith(".ts")) files.push(`src/config/${f}`);
    }
  }
  return files.map(read).join("\n");
}

const ENV_NAME = "[A-Z][A-Z0-9_]*";

/** Every environment variable the configuration reads: `env.NAME`, `env["NAME"]` and `"NAME"` arguments. */
function settingsRead(source: string): Set<string> {
  const names = new Set<string>();
  for (const m of source.matchAll(new RegExp(`\\benv\\.(${ENV_NAME})\\b`, "g"))) names.add(m[1] ?? "");
  for (const m of source.matchAll(new RegExp(`["'](${ENV_NAME})["']`, "g"))) names.add(m[1] ?? "");
  return names;
}

/** The defaults written as plain literals in the code: `intVar(env, "NAME", 10_000, …)`, `env.NAME || "x"`, … */
function literalDefaults(source: string): Map<string, string> {
  const defaults = new Map<string, string>();
  const call = new RegExp(
    `\\b(?:intVar|boolVar|absolutePathVar|imageVar)\\(\\s*env,\\s*"(${ENV_NAME})",\\s*([^,)]+?)\\s*[,)]`,
    "g",
  );
  for (const m of source.matchAll(call)) defaults.set(m[1] ?? "", m[2] ?? "");
  for (const m of source.matchAll(
    new RegExp(`\\bchoiceVar\\(\\s*env,\\s*"(${ENV_NAME})",\\s*\\[\\s*("[^"]*")`, "g"),
  )) {
    defaults.set(m[1] ?? "", m[2] ?? "");
  }
  for (const m of source.matchAll(new RegExp(`\\benv\\.(${ENV_NAME})\\s*\\|\\|\\s*("[^"]*")`, "g"))) {
    defaults.set(m[1] ?? "", m[2] ?? "");
  }
  const plain = new Map<string, string>();
  for (const [name, literal] of defaults) {
    if (/^\d[\d_]*$/.test(literal)) plain.set(name, literal.replace(/_/g, ""));
    else if (/^(true|false)$/.test(literal)) plain.set(name, literal);
    // An empty string is "unset", which the page says in words.
    else if (/^"[^"]+"$/.test(literal)) plain.set(name, literal.slice(1, -1));
  }
  return plain;
}

interface SettingRow {
  names: string[];
  defaults: string;
  line: string;
}

/** The rows of every `| variable | default | meaning |` table of a page. */
function settingRows(page: string): SettingRow[] {
  const rows: SettingRow[] = [];
  let inTable = false;
  for (const line of page.split("\n")) {
    if (/^\| variable \| default \| meaning \|$/.test(line)) inTable = true;
    else if (!line.startsWith("|")) inTable = false;
    else if (inTable && !line.startsWith("|---")) {
      const cells = line.split(/(?<!\\)\|/);
      const names = [...(cells[1] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");
      rows.push({ names, defaults: cells[2] ?? "", line });
    }
  }
  return rows;
}

describe("docs/configuration.md", () => {
  const source = configSource();
  const rows = settingRows(read("docs/configuration.md"));

  it("names every setting the server reads, once, and none it does not read", () => {
    const read = [...settingsRead(source)].sort();
    assert.ok(read.includes("SLIPWAY_DATA_DIR") && read.includes("PORT"), "the scan finds settings");
    const documented = rows.flatMap((r) => r.names);
    assert.deepEqual([...new Set(documented)].sort(), read);
    assert.equal(documented.length, new Set(documented).size, "a setting documented twice");
  });

  it("gives each setting the default the code has", () => {
    const defaults = literalDefaults(source);
    assert.ok(defaults.size > 30, `the scan finds defaults (${defaults.size})`);
    const wrong: string[] = [];
    for (const [name, value] of defaults) {
      const row = rows.find((r) => r.names.includes(name));
      const escaped = value.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
      const shown = /^\d+$/.test(value)
        ? new RegExp(`(^|[^\\d,.])${escaped}(?![\\d,]|\\.\\d)`)
        : new RegExp(`\`${escaped}\``);
      if (row === undefined || !shown.test(row.defaults)) wrong.push(`${name}: ${value} in ${row?.line}`);
    }
    assert.deepEqual(wrong, []);
  });
});

/** README.md and every page of docs/, relative to the repository. */
function pages(): string[] {
  const docs = readdirSync(join(REPO_ROOT, "docs"), { recursive: true, encoding: "utf8" });
  return ["README.md", ...docs.filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
}

/** A page without its fenced code blocks and code spans: what is left is prose, links and headings. */
function prose(page: string): string {
  return page.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1\s*$/gm, "").replace(/`[^`\n]*`/g, "code");
}

/** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const text = page.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1\s*$/gm, "");
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const words = (m[1] ?? "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/`/g, "");
    const base = words
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe("README.md and docs/", () => {
  it("every relative link leads to a file of the repository, and every anchor to a heading", () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = prose(read(page));
      for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1] ?? "";
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const [path = "", anchor] = target.split("#");
        const file = path === "" ? join(REPO_ROOT, page) : resolve(REPO_ROOT, dirname(page), path);
        const inside = relative(REPO_ROOT, file);
        if (inside.startsWith("..") || !existsSync(file)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!statSync(file).isFile() || !file.endsWith(".md") || !anchors(read(inside)).has(anchor)) {
          broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  it("every path of the repository they name in code (`src/…`, `test/…`, …) exists", () => {
    const missing: string[] = [];
    for (const page of pages()) {
      const text = read(page).replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1\s*$/gm, "");
      for (const m of text.matchAll(/`((?:src|test|bench|deploy|templates|docs)\/[^`\s]*)`/g)) {
        const path = m[1] ?? "";
        // Patterns and placeholders (`test/console/*.test.ts`, `<id>`) name no one file.
        if (/[*<>…{}]/.test(path)) continue;
        if (!existsSync(join(REPO_ROOT, path))) missing.push(`${page}: ${path}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it("the anchors are GitHub's", () => {
    const page =
      "# A `b` c\n## Process limit (`SLIPWAY_APP_PIDS_MAX`, default 512)\n## x\n## x\n```\n# no\n```\n";
    assert.deepEqual(
      [...anchors(page)],
      ["a-b-c", "process-limit-slipway_app_pids_max-default-512", "x", "x-1"],
    );
  });
});
