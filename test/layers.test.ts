import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

/*
 * The layers of src/, bottom up, and the rules between them (docs/architecture.md):
 *   1. crypto, config, db, backup (in that order: crypto takes its settings as arguments; backup
 *      reads and writes the whole database through db)
 *   2. core, protocol, templates
 *   3. codehost, oauth, runtimes, listener
 *   4. reconciler
 *   5. resources (services, stores, schemas)
 *   6. http, and each resource's route files (`routes.ts`, `*-routes.ts`): the HTTP face
 *   7. app, routes, server, bootstrap, deps, platform, wiring (what hands the layers their handles)
 *   8. the clients: cli, console, sdk
 * An import (a type-only one too) may point down or across, never up; no two files and no two
 * rooms (a top folder, or one folder of resources/, runtimes/ or core/) import each other even
 * through others; and the clients import the server only through `cli/serve.ts`.
 */

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), "..", "src");

const FOLDER_LAYER: Record<string, number> = {
  crypto: 1,
  config: 1.1,
  db: 1.2,
  backup: 1.3,
  core: 2,
  protocol: 2,
  templates: 2,
  codehost: 3,
  oauth: 3,
  runtimes: 3,
  listener: 3,
  reconciler: 4,
  resources: 5,
  http: 6,
  app: 7,
  routes: 7,
  server: 7,
  bootstrap: 7,
  deps: 7,
  platform: 7,
  wiring: 7,
  cli: 8,
  console: 8,
  sdk: 8,
};
const CLIENTS = new Set(["cli", "console", "sdk"]);
const CLIENT_GATEWAY = "cli/serve.ts";

/** Static imports and re-exports (`… from "x"`, `import "x"`, `import type`) and dynamic `import("x")`. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|tsx|mts)$/.test(entry.name)) yield path;
  }
}

const top = (file: string) => (file.split("/")[0] ?? "").replace(/\.tsx?$/, "");

function layerOf(file: string): number | undefined {
  if (file.startsWith("resources/") && /(^|-)routes\.ts$/.test(file.split("/").pop() ?? "")) return 6;
  return FOLDER_LAYER[top(file)];
}

function roomOf(file: string): string {
  const parts = file.split("/");
  if (parts.length > 2 && ["resources", "runtimes", "core"].includes(parts[0] ?? "")) {
    return `${parts[0]}/${parts[1]}`;
  }
  return top(file);
}

/** Every file of `root` (relative, with `/`) and the files it imports. */
function importGraph(root: string): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const path of sourceFiles(root)) {
    const targets = new Set<string>();
    for (const [, spec = ""] of readFileSync(path, "utf8").matchAll(SPECIFIER)) {
      if (spec.startsWith(".")) targets.add(relative(root, resolve(dirname(path), spec)));
    }
    graph.set(relative(root, path), targets);
  }
  return graph;
}

/** Groups of nodes that reach each other (Tarjan's strongly connected components, size > 1). */
function circles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

interface Findings {
  unplaced: string[];
  upward: string[];
  clientReach: string[];
  fileCircles: string[][];
  roomCircles: string[][];
}

function check(root: string): Findings {
  const graph = importGraph(root);
  const findings: Findings = { unplaced: [], upward: [], clientReach: [], fileCircles: [], roomCircles: [] };
  const rooms = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = layerOf(file);
    if (from === undefined) findings.unplaced.push(file);
    const room = roomOf(file);
    const roomTargets = rooms.get(room) ?? new Set<string>();
    rooms.set(room, roomTargets);
    for (const target of targets) {
      const to = layerOf(target);
      if (roomOf(target) !== room) roomTargets.add(roomOf(target));
      if (from === undefined || to === undefined) continue;
      if (to > from) findings.upward.push(`${file} -> ${target}`);
      if (CLIENTS.has(top(file)) && !CLIENTS.has(top(target)) && file !== CLIENT_GATEWAY) {
        findings.clientReach.push(`${file} -> ${target}`);
      }
    }
  }
  findings.fileCircles = circles(graph);
  findings.roomCircles = circles(rooms);
  return findings;
}

describe("layers", () => {
  const findings = check(SRC);

  it("every file of src/ sits in a layer", () => {
    assert.deepEqual(findings.unplaced, []);
  });

  it("no import points up a layer", () => {
    assert.deepEqual(findings.upward, []);
  });

  it("the clients reach the server only through cli/serve.ts", () => {
    assert.deepEqual(findings.clientReach, []);
  });

  it("no files import each other, even through others", () => {
    assert.deepEqual(findings.fileCircles, []);
  });

  it("no rooms import each other, even through others", () => {
    assert.deepEqual(findings.roomCircles, []);
  });

  it("the check finds each kind of breach however the import is written", () => {
    const root = mkdtempSync(join(tmpdir(), "slipway-layers-"));
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    };
    try {
      write("http/errors.ts", "export const x = 1;\n");
      write("codehost/ok.ts", 'import { y } from "./http-ish.ts";\nexport const y = 1;\n');
      write("codehost/github/bad1.ts", 'import type { x } from "../../http/errors.ts";\n');
      write("codehost/github/bad2.ts", 'export { x as z } from "../../http/errors.ts";\n');
      write("codehost/github/bad3.ts", 'const later = await import("../../http/errors.ts");\n');
      write("resources/a/store.ts", 'import { b } from "../b/store.ts";\n');
      write("resources/b/store.ts", 'import { a } from "../a/service.ts";\n');
      write("resources/a/service.ts", "export const a = 1;\n");
      write("resources/a/routes.ts", 'import { x } from "../../http/errors.ts";\n');
      write("cli/main.ts", 'import { d } from "../db/client.ts";\n');
      write("cli/serve.ts", 'import { d } from "../db/client.ts";\n');
      write("db/client.ts", "export const d = 1;\n");
      write("stray/file.ts", "export const s = 1;\n");
      const found = check(root);
      assert.deepEqual(found.unplaced, ["stray/file.ts"]);
      assert.deepEqual(
        found.upward.sort(),
        [1, 2, 3].map((n) => `codehost/github/bad${n}.ts -> http/errors.ts`),
      );
      assert.deepEqual(found.clientReach, ["cli/main.ts -> db/client.ts"]);
      assert.deepEqual(found.fileCircles, []);
      assert.deepEqual(found.roomCircles, [["resources/a", "resources/b"]]);
      write("resources/a/service.ts", 'import { s } from "./store.ts";\n');
      write("resources/a/store.ts", 'import { a } from "./service.ts";\n');
      assert.deepEqual(check(root).fileCircles, [["resources/a/service.ts", "resources/a/store.ts"]]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
