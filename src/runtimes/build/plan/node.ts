import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { exists } from "../../shared/files.ts";
import { fail, packageScript, readPackageJson } from "../app-config.ts";
import type { Detector, LanguageDetection, PackageIndexes } from "./detection.ts";
import type { BuildStep } from "./types.ts";

/** package.json fields that name packages to install. */
const DEPENDENCY_FIELDS = [
  "dependencies",
  "devDependencies",
  "optionalDependencies",
  "peerDependencies",
  "bundleDependencies",
  "bundledDependencies",
  "workspaces",
];
/** Scripts npm runs as part of an install. */
const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "preprepare", "prepare", "postprepare"];

/** Where corepack fetches package managers when no mirror is configured. */
export const DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org";
/** Debian's bundle of the machine's trusted CAs (the sandbox shows /etc/ssl/certs). */
export const SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

type ManagerName = "npm" | "pnpm" | "yarn";

/** The lockfiles that name a manager, in the order one is chosen when several are there. */
const LOCKFILES: readonly { file: string; manager: ManagerName }[] = [
  { file: "pnpm-lock.yaml", manager: "pnpm" },
  { file: "yarn.lock", manager: "yarn" },
  // npm ci reads the shrinkwrap over package-lock.json when both are there.
  { file: "npm-shrinkwrap.json", manager: "npm" },
  { file: "package-lock.json", manager: "npm" },
];

/** The package manager a source installs with, and how it was told. */
export interface NodeManager {
  name: ManagerName;
  /** Yarn 2+ ("berry"): `--immutable`, and its own registry setting. */
  berry: boolean;
  /** The manager's own lockfile in the source, if any. */
  lockfile?: string;
  /** package.json `packageManager` (without its hash): corepack reads it and runs that version. */
  declared?: string;
  /**
   * Without `packageManager`: the major the lockfile was written by (`pnpm@9`, `yarn@1`), given
   * to corepack, so a newer major never rewrites or rejects an older lockfile.
   */
  pin?: string;
}

function nonEmpty(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object" && value !== null) return Object.keys(value).length > 0;
  return value !== undefined && value !== null && value !== false;
}

/**
 * Whether `npm install` would do anything: a package with nothing to install and no install
 * scripts skips the step, which is most of a small app's deploy time.
 */
export function needsInstall(pkg: Record<string, unknown> | undefined): boolean {
  if (pkg === undefined) return true;
  return (
    DEPENDENCY_FIELDS.some((field) => nonEmpty(pkg[field])) ||
    INSTALL_SCRIPTS.some((name) => packageScript(pkg, name) !== undefined)
  );
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return "";
  }
}

/** pnpm's major from `lockfileVersion` (as Vercel maps it): 5.3 → 6, 5.4 → 7, 6.x → 8, 7.x and 9.x → 9. */
export function pnpmMajorOf(lockfile: string): number | undefined {
  const m = /^lockfileVersion:\s*['"]?(\d+)(?:\.(\d+))?/m.exec(lockfile);
  if (!m) return undefined;
  const major = Number(m[1]);
  const minor = Number(m[2] ?? 0);
  if (major === 5) return minor >= 4 ? 7 : minor === 3 ? 6 : undefined;
  if (major === 6) return 8;
  if (major === 7 || major === 9) return 9;
  return undefined;
}

/** Yarn's major from yarn.lock: `# yarn lockfile v1` is classic; berry's `__metadata.version` 8 is Yarn 4, 5–7 Yarn 3. */
export function yarnMajorOf(lockfile: string): number | undefined {
  if (/^# yarn lockfile v1\s*$/m.test(lockfile)) return 1;
  const m = /^__metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+version:\s*(\d+)/m.exec(lockfile);
  if (!m) return undefined;
  const version = Number(m[1]);
  return version >= 8 ? 4 : version >= 5 ? 3 : 2;
}

/**
 * `packageManager` split into a manager Slipway installs with and its version; undefined when the
 * field is absent or names another manager (logged: the lockfile decides then). A known manager
 * without a version fails the build, as corepack would, but saying what to write.
 */
function declaredManager(
  pkg: Record<string, unknown> | undefined,
  log: (line: string) => void,
): { name: ManagerName; version: string } | undefined {
  const value = pkg?.packageManager;
  if (value === undefined) return undefined;
  const m = typeof value === "string" ? /^(npm|pnpm|yarn)@([^+\s]+)(?:\+\S*)?$/.exec(value.trim()) : null;
  if (m) return { name: m[1] as ManagerName, version: m[2] ?? "" };
  if (typeof value === "string" && /^(npm|pnpm|yarn)(@.*)?$/.test(value.trim())) {
    fail(
      log,
      `package.json "packageManager" must be name@version (e.g. "pnpm@9.12.0"), not ${JSON.stringify(value)}`,
    );
  }
  log(
    `slipway: package.json "packageManager" ${JSON.stringify(value)} is not npm, pnpm or yarn: ` +
      `the lockfile chooses the package manager`,
  );
  return undefined;
}

/**
 * Which manager installs the source: `packageManager` in package.json, else the lockfile there
 * (pnpm-lock.yaml, yarn.lock, then npm's), else npm.
 */
export async function chooseManager(
  appDir: string,
  pkg: Record<string, unknown> | undefined,
  log: (line: string) => void,
): Promise<NodeManager> {
  const found: { file: string; manager: ManagerName }[] = [];
  for (const entry of LOCKFILES) if (await exists(join(appDir, entry.file))) found.push(entry);
  const declared = declaredManager(pkg, log);
  const name = declared?.name ?? found[0]?.manager ?? "npm";
  const lockfile = found.find((f) => f.manager === name)?.file;
  const ignored = found.filter((f) => f.manager !== name);
  if (ignored.length > 0) {
    const why = declared
      ? `package.json "packageManager" names ${name}`
      : `${name} installs from ${lockfile}`;
    log(`slipway: ${ignored.map((f) => f.file).join(", ")} not used: ${why}`);
  }
  const text = lockfile === undefined || name === "npm" ? "" : await readText(join(appDir, lockfile));
  if (declared) {
    const major = Number(/^(\d+)\./.exec(declared.version)?.[1] ?? Number.NaN);
    // A URL (corepack takes one for Yarn) has no major: berry is what people point a URL at.
    const berry = name === "yarn" && (Number.isNaN(major) || major >= 2);
    return { name, berry, declared: `${name}@${declared.version}`, ...(lockfile ? { lockfile } : {}) };
  }
  if (name === "pnpm") {
    const major = pnpmMajorOf(text);
    return {
      name,
      berry: false,
      ...(lockfile ? { lockfile } : {}),
      ...(major ? { pin: `pnpm@${major}` } : {}),
    };
  }
  if (name === "yarn") {
    const major = yarnMajorOf(text) ?? 1;
    return { name, berry: major >= 2, pin: `yarn@${major}`, ...(lockfile ? { lockfile } : {}) };
  }
  return { name, berry: false, ...(lockfile ? { lockfile } : {}) };
}

/** How the manager is invoked: through corepack (no global shims: /usr is read-only in the sandbox). */
export function managerCommand(m: NodeManager): string {
  if (m.name === "npm") return m.declared ? "corepack npm" : "npm";
  return `corepack ${m.pin ?? m.name}`;
}

/** The install command, with the lockfile frozen when there is one. */
export function installCommand(m: NodeManager): string {
  const exe = managerCommand(m);
  if (m.name === "npm") return m.lockfile ? `${exe} ci` : `${exe} install`;
  if (m.lockfile === undefined) return `${exe} install`;
  return `${exe} install ${m.berry ? "--immutable" : "--frozen-lockfile"}`;
}

/** The public registries' URLs Yarn 1 writes into yarn.lock's `resolved` fields. */
const PUBLIC_REGISTRY_URLS = /https:\/\/registry\.(yarnpkg\.com|npmjs\.org)\//;

/**
 * Yarn 1 fetches each package from its lockfile's `resolved` URL, whatever registry is configured:
 * with a mirror, a step before the install points the public registry's URLs at the mirror (the
 * integrity hashes stay, so the bytes are still checked). None when the lockfile names no public
 * registry, or the mirror's URL holds characters the sed expression cannot carry.
 */
export function yarnClassicMirrorStep(lockfile: string, text: string, mirror: string): BuildStep | undefined {
  if (!PUBLIC_REGISTRY_URLS.test(text)) return undefined;
  const target = `${mirror.replace(/\/+$/, "")}/`;
  if (!/^[A-Za-z0-9:/._~%@+=?,;-]+$/.test(target)) return undefined;
  const expressions = ["registry\\.yarnpkg\\.com", "registry\\.npmjs\\.org"]
    .filter((host) => `https://${host.replaceAll("\\", "")}/` !== target)
    .map((host) => `-e 's|https://${host}/|${target}|g'`);
  return { label: "install", command: `sed -i ${expressions.join(" ")} ${lockfile}` };
}

/**
 * What builds and the app need to reach the registry: npm, pnpm and Yarn classic read
 * `npm_config_registry`, Yarn berry its own variable, corepack `COREPACK_NPM_REGISTRY` (the mirror
 * carries no signatures, so no integrity keys, and never a prompt: nobody is there to answer it).
 * Set for npm too: a deployment's own install command may call corepack.
 */
export function nodeEnv(m: NodeManager, indexes: PackageIndexes, caBundle?: string): Record<string, string> {
  const env: Record<string, string> = {
    // The managers corepack fetches are the deployment's own, in its HOME like npm's cache.
    COREPACK_HOME: "{home}/.cache/node/corepack",
    COREPACK_NPM_REGISTRY: (indexes.npm ?? DEFAULT_NPM_REGISTRY).replace(/\/+$/, ""),
    COREPACK_INTEGRITY_KEYS: "0",
    COREPACK_ENABLE_DOWNLOAD_PROMPT: "0",
    // Corepack would otherwise write packageManager into the source's package.json.
    COREPACK_ENABLE_AUTO_PIN: "0",
  };
  // npm trusts the machine's CAs through its global npmrc's cafile; corepack, pnpm and yarn are
  // Node programs that know only Node's own list, so a mirror (or proxy) signed by a CA the machine
  // added would fail them. Added to Node's list, never in place of it.
  if (caBundle !== undefined) env.NODE_EXTRA_CA_CERTS = caBundle;
  if (indexes.npm !== undefined) {
    env.npm_config_registry = indexes.npm;
    if (m.berry) {
      env.YARN_NPM_REGISTRY_SERVER = indexes.npm.replace(/\/+$/, "");
      // Yarn 2+ refuses a plain-http registry unless its host is listed (only localhost is by default).
      const url = URL.canParse(indexes.npm) ? new URL(indexes.npm) : undefined;
      if (url?.protocol === "http:") env.YARN_UNSAFE_HTTP_WHITELIST = url.hostname.replace(/^\[|\]$/g, "");
    }
  }
  // Yarn would otherwise call its own hosts (telemetry, the classic update check), beyond the registry.
  if (m.berry) env.YARN_ENABLE_TELEMETRY = "0";
  else if (m.name === "yarn") {
    env.YARN_DISABLE_SELF_UPDATE_CHECK = "true";
    // As root (unsandboxed) Yarn 1 would cache in /usr/local/share, shared by every deployment.
    env.YARN_CACHE_FOLDER = "{home}/.cache/yarn";
  }
  return env;
}

/**
 * A Node source: one with a package.json. npm, pnpm or yarn (through corepack) installs it, with
 * the lockfile frozen; its `build` script runs, and its `start` script starts it, with the same manager.
 */
export const detectNode: Detector = async ({ appDir, indexes, log }) => {
  if (!(await exists(join(appDir, "package.json")))) return undefined;
  const pkg = await readPackageJson(appDir);
  const manager = await chooseManager(appDir, pkg, log);
  const evidence = ["package.json"];
  if (manager.lockfile !== undefined) evidence.push(manager.lockfile);
  if (manager.declared !== undefined) evidence.push(`packageManager ${manager.declared}`);
  const exe = managerCommand(manager);
  const steps: BuildStep[] = [];
  if (needsInstall(pkg)) {
    // Labelled "install" too: a deployment's own install command replaces both.
    if (manager.name === "yarn" && !manager.berry && manager.lockfile && indexes.npm !== undefined) {
      const text = await readText(join(appDir, manager.lockfile));
      const rewrite = yarnClassicMirrorStep(manager.lockfile, text, indexes.npm);
      if (rewrite) steps.push(rewrite);
    }
    steps.push({ label: "install", command: installCommand(manager) });
  } else log(`No ${manager.name} install: package.json declares no dependencies and no install scripts.`);
  if (packageScript(pkg, "build") !== undefined) steps.push({ label: "build", command: `${exe} run build` });
  const detection: LanguageDetection = {
    language: "node",
    evidence,
    steps,
    toolchainEnv: nodeEnv(manager, indexes, (await exists(SYSTEM_CA_BUNDLE)) ? SYSTEM_CA_BUNDLE : undefined),
  };
  if (packageScript(pkg, "start") !== undefined) detection.start = `${exe} start`;
  if (manager.lockfile !== undefined)
    detection.cache = { dirs: ["node_modules"], keyFiles: ["package.json", manager.lockfile] };
  return detection;
};
