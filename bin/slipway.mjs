#!/usr/bin/env node
// The `slipway` command (`npm start` runs `slipway serve`). It runs the compiled JavaScript in
// dist/ that `npm ci` builds (the `prepare` script): less memory and a faster start than compiling
// TypeScript on the fly. In a checkout without dist/, or when src/ changed after the build, it runs
// the source through tsx instead, in this same process, and says so. An installed copy (npm install
// or npm install -g of a tarball or git URL) holds dist/ and no src/, so it always runs dist/.
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const compiled = join(root, "dist", "cli", "main.js");

/** Modification time of a file, or undefined when it is absent. */
function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** What the build compiles or copies: a change to anything else (a README) needs no rebuild. */
const BUILT = /\.(ts|sql)$/;

/** Whether any source file under `dir` was modified after `since`. */
function changedSince(dir, since) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (changedSince(path, since)) return true;
    } else if (BUILT.test(entry.name) && (mtime(path) ?? 0) > since) return true;
  }
  return false;
}

const builtAt = mtime(compiled);
const src = join(root, "src");
const source = join(src, "cli", "main.ts");
const hasSource = mtime(source) !== undefined;
if (builtAt !== undefined && (!hasSource || !changedSince(src, builtAt))) {
  await import(pathToFileURL(compiled).href);
} else if (!hasSource) {
  process.stderr.write(
    `slipway: ${root} has neither a build (dist/) nor the source (src/); install it again, or run npm run build in a checkout\n`,
  );
  process.exitCode = 1;
} else {
  process.stderr.write(
    builtAt === undefined
      ? "slipway: no build in dist/; running the TypeScript source (npm run build compiles it)\n"
      : "slipway: src/ changed after the build in dist/; running the source (npm run build updates it)\n",
  );
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(source).href);
}
