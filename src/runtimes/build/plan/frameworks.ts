import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { packageScript, readPackageJson } from "../app-config.ts";
import type { LanguageDetection } from "./detection.ts";

/**
 * The JavaScript frameworks Slipway knows: from package.json's dependencies and the framework's
 * config file, its build command (when package.json has no `build` script), its server's start
 * command (when package.json has no `start` script), or the directory its static build writes.
 * A small table rather than @netlify/build-info (its dependencies include an error reporter and a
 * CLI parser) or @vercel/frameworks (data only: its matching lives in @vercel/fs-detectors, and
 * its output settings are Vercel's own): docs/builds.md says why.
 */

/** What a framework's build leaves: a server to start, or files to serve. */
export interface FrameworkOutput {
  /** `vite`, `next`, … as the log line names it. */
  name: string;
  /** Run when package.json has no `build` script. */
  build: string;
  /** The server's start command; none: the output is static. */
  start?: string;
  /** The static output's directory, relative to the app directory. */
  staticRoot?: string;
  /** A single-page app: a missing path without an extension is answered with index.html. */
  spa?: boolean;
}

type Deps = Record<string, unknown>;
/** What rules read: the dependencies, a config file's text (undefined when absent), a script. */
interface Probe {
  deps: Deps;
  config: (base: string) => Promise<string | undefined>;
  scripts: (name: string) => string | undefined;
}

const bin = (name: string) => `./node_modules/.bin/${name}`;
const CONFIG_EXTENSIONS = ["js", "mjs", "cjs", "ts", "mts"];

/** One framework: undefined when the source is not of it. */
type Rule = (p: Probe) => Promise<FrameworkOutput | undefined>;

/** In order: the meta-frameworks first, as each depends on Vite (or React) itself. */
const RULES: readonly Rule[] = [
  async ({ deps, config }) => {
    if (!("next" in deps)) return undefined;
    // `output: "export"` in next.config writes a static site to out/.
    const text = (await config("next.config")) ?? "";
    if (/output\s*:\s*["']export["']/.test(text))
      return { name: "next", build: `${bin("next")} build`, staticRoot: "out" };
    return { name: "next", build: `${bin("next")} build`, start: `${bin("next")} start` };
  },
  async ({ deps, scripts }) => {
    if (!("nuxt" in deps)) return undefined;
    // `nuxt generate` (the build script) prerenders every page to .output/public.
    if (/\bnuxt\s+generate\b/.test(scripts("build") ?? ""))
      return { name: "nuxt", build: `${bin("nuxt")} generate`, staticRoot: ".output/public" };
    return { name: "nuxt", build: `${bin("nuxt")} build`, start: "node .output/server/index.mjs" };
  },
  async ({ deps }) => {
    if (!("@remix-run/dev" in deps) && !("@remix-run/serve" in deps)) return undefined;
    // Remix on Vite builds build/server/index.js; the classic compiler build/index.js.
    const vite = "@remix-run/dev" in deps && "vite" in deps;
    return {
      name: "remix",
      build: `${bin("remix")} ${vite ? "vite:build" : "build"}`,
      start: `${bin("remix-serve")} ${vite ? "build/server/index.js" : "build/index.js"}`,
    };
  },
  async ({ deps }) => {
    if (!("@sveltejs/kit" in deps)) return undefined;
    const build = `${bin("vite")} build`;
    if ("@sveltejs/adapter-static" in deps) return { name: "sveltekit", build, staticRoot: "build" };
    if ("@sveltejs/adapter-node" in deps) return { name: "sveltekit", build, start: "node build" };
    // adapter-auto and the hosted platforms' adapters leave neither a server nor a site to serve.
    return { name: "sveltekit", build };
  },
  async ({ deps }) => {
    if (!("astro" in deps)) return undefined;
    const build = `${bin("astro")} build`;
    // The node adapter builds a standalone server; without an adapter the output is static.
    if ("@astrojs/node" in deps) return { name: "astro", build, start: "node ./dist/server/entry.mjs" };
    return { name: "astro", build, staticRoot: "dist" };
  },
  async ({ deps }) => {
    if (!("vite" in deps)) return undefined;
    return { name: "vite", build: `${bin("vite")} build`, staticRoot: "dist", spa: true };
  },
];

function depsOf(pkg: Record<string, unknown>): Deps {
  const out: Deps = {};
  for (const field of ["dependencies", "devDependencies"]) {
    const value = pkg[field];
    if (typeof value === "object" && value !== null && !Array.isArray(value)) Object.assign(out, value);
  }
  return out;
}

/** The framework a Node source uses, from its package.json and config files; undefined: none known. */
export async function detectFramework(appDir: string): Promise<FrameworkOutput | undefined> {
  const pkg = await readPackageJson(appDir);
  if (pkg === undefined) return undefined;
  const names = new Set(await readdir(appDir).catch(() => [] as string[]));
  const probe: Probe = {
    deps: depsOf(pkg),
    config: async (base) => {
      const file = CONFIG_EXTENSIONS.map((ext) => `${base}.${ext}`).find((f) => names.has(f));
      return file === undefined ? undefined : readFile(join(appDir, file), "utf8").catch(() => undefined);
    },
    scripts: (name) => packageScript(pkg, name),
  };
  for (const rule of RULES) {
    const found = await rule(probe);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * A Node detection with its framework's part: named in the evidence, its build when package.json
 * has no `build` script, its server when there is no `start` script, else its static output.
 */
export async function withFramework(
  detection: LanguageDetection,
  appDir: string,
): Promise<{ detection: LanguageDetection; framework?: FrameworkOutput }> {
  if (detection.language !== "node") return { detection };
  const framework = await detectFramework(appDir);
  if (framework === undefined) return { detection };
  const steps = detection.steps.some((s) => s.label === "build")
    ? detection.steps
    : [...detection.steps, { label: "build", command: framework.build }];
  const out: LanguageDetection = { ...detection, evidence: [...detection.evidence, framework.name], steps };
  if (out.start === undefined) {
    if (framework.start !== undefined) {
      out.start = framework.start;
      out.startFrom = framework.name;
    } else if (framework.staticRoot !== undefined) out.staticRoot = framework.staticRoot;
  }
  return { detection: out, framework };
}
