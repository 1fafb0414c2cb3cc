// Bundles the console (src/console/app/main.tsx → dist/console/app.js + app.css) with esbuild. Run
// by `npm run build:console` (tools/build-console.ts; `prepare`, so `npm ci` builds it) and by the
// server when the bundle is missing (console.ts): so it is server code, not the console's.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const CONSOLE_DIST = join(ROOT, "dist", "console");

export const consoleBuilt = (): boolean =>
  existsSync(join(CONSOLE_DIST, "app.js")) && existsSync(join(CONSOLE_DIST, "app.css"));

export async function buildConsole(): Promise<void> {
  await build({
    entryPoints: { app: join(ROOT, "src", "console", "app", "main.tsx") },
    outdir: CONSOLE_DIST,
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    logLevel: "warning",
  });
}
