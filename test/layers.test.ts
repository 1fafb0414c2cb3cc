import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), "..", "src");

/** Layers below the HTTP one: they throw their own errors and never reach up into `http/`. */
const BELOW_HTTP = ["codehost", "runtimes", "reconciler", "crypto", "db"];

/** Static imports and re-exports (`… from "x"`, `import "x"`) and dynamic `import("x")`. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|js|mts|mjs)$/.test(entry.name)) yield path;
  }
}

/** Every `file: specifier` under `folders` of `root` whose import lands in `root/http`. */
function httpImports(root: string, folders: string[]): string[] {
  const http = join(root, "http");
  const found: string[] = [];
  for (const folder of folders) {
    for (const file of sourceFiles(join(root, folder))) {
      for (const [, spec = ""] of readFileSync(file, "utf8").matchAll(SPECIFIER)) {
        const target = spec.startsWith(".") ? resolve(dirname(file), spec) : spec;
        if (target === http || target.startsWith(http + sep) || /(^|\/)http\//.test(spec)) {
          found.push(`${relative(root, file)}: ${spec}`);
        }
      }
    }
  }
  return found;
}

describe("layers", () => {
  it(`${BELOW_HTTP.join(", ")} import nothing from http/`, () => {
    assert.deepEqual(httpImports(SRC, BELOW_HTTP), []);
  });

  it("the check finds an http/ import however it is written", () => {
    const root = mkdtempSync(join(tmpdir(), "slipway-layers-"));
    try {
      mkdirSync(join(root, "http"));
      mkdirSync(join(root, "codehost", "github"), { recursive: true });
      writeFileSync(join(root, "http", "errors.ts"), "export const x = 1;\n");
      writeFileSync(join(root, "codehost", "ok.ts"), 'import { y } from "./http-ish.ts";\n');
      writeFileSync(
        join(root, "codehost", "github", "bad.ts"),
        [
          'import { x } from "../../http/errors.ts";',
          'export { x as z } from "../../http/errors.ts";',
          'const later = await import("../../http/errors.ts");',
        ].join("\n"),
      );
      const found = httpImports(root, ["codehost"]);
      assert.equal(found.length, 3, found.join("\n"));
      assert.ok(found.every((f) => f.startsWith(join("codehost", "github", "bad.ts"))));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
