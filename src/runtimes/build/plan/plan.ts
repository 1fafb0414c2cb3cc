import { type AppConfig, fail, readAppConfig } from "../app-config.ts";
import type { Detector, LanguageDetection, PackageIndexes } from "./detection.ts";
import { dockerfilePlan, rootDockerfile } from "./dockerfile.ts";
import { type FrameworkOutput, withFramework } from "./frameworks.ts";
import { detectNode } from "./node.ts";
import { readProcfile } from "./procfile.ts";
import { detectPython } from "./python.ts";
import { plainSiteRoot } from "./static.ts";
import type { BuildPlan, BuildStep, ProcessPlan, StaticPlan } from "./types.ts";

/** What a build is planned from: the source, and what its deployment and revision say. */
export interface PlanInput {
  appDir: string;
  /** The revision's app config (`framework_config_path`), relative to the source. */
  configPath?: string;
  /** `source_config.install_command` / `build_command`: they replace the detected ones. */
  installCommand?: string;
  buildCommand?: string;
  indexes: PackageIndexes;
  log: (line: string) => void;
}

/** The languages Slipway detects, asked in order; the first that knows the source plans it. */
const DETECTORS: readonly Detector[] = [detectNode, detectPython];

/**
 * The detected steps with the deployment's own install and build commands in their place. Steps
 * that are neither (a toolchain's setup: a virtualenv) run first, as the install needs them.
 */
export function withGivenCommands(steps: BuildStep[], install?: string, build?: string): BuildStep[] {
  const given = (label: string, command: string | undefined) => {
    const trimmed = command?.trim();
    return trimmed ? [{ label, command: trimmed }] : steps.filter((s) => s.label === label);
  };
  // In the detected order (a venv before the install, the framework config's dependencies after it),
  // each of install and build where the detector put it, else install before what follows it.
  const out = steps.filter((s) => s.label !== "install" && s.label !== "build");
  const at = steps.findIndex((s) => s.label === "install");
  const before =
    at === -1
      ? out.findIndex((s) => s.label === "dependencies")
      : steps.slice(0, at).filter((s) => s.label !== "build").length;
  out.splice(before === -1 ? out.length : before, 0, ...given("install", install));
  return [...out, ...given("build", build)];
}

/** Where the start command comes from, highest first: the app config, a Procfile, the language. */
function startOf(
  configStart: string | undefined,
  procfileWeb: string | undefined,
  detection: LanguageDetection | undefined,
): { command: string; from: string } | undefined {
  if (configStart !== undefined) return { command: configStart, from: "the app config" };
  if (procfileWeb !== undefined) return { command: procfileWeb, from: "Procfile web:" };
  if (detection?.start !== undefined)
    return { command: detection.start, from: detection.startFrom ?? detection.language };
  return undefined;
}

/**
 * Plans a source's build before anything runs, and writes what it detected and will run to the
 * log (`slipway: detected …`). Precedence, highest first: the deployment's install and build
 * commands; the app config; a Procfile; what the language detector found.
 */
export async function planBuild(input: PlanInput): Promise<BuildPlan> {
  const { appDir, configPath, log } = input;
  const config = await readAppConfig(appDir, configPath, log);
  // A Dockerfile the app config names is what it asks for: no language is detected around it.
  if (config.dockerfile !== undefined)
    return dockerfilePlan(appDir, config.dockerfile, config, input.indexes, log);
  let detection: LanguageDetection | undefined;
  for (const detect of DETECTORS) {
    detection = await detect({ appDir, config, indexes: input.indexes, log });
    if (detection !== undefined) break;
  }
  let framework: FrameworkOutput | undefined;
  if (detection !== undefined) ({ detection, framework } = await withFramework(detection, appDir));
  const steps = withGivenCommands(detection?.steps ?? [], input.installCommand, input.buildCommand);
  const procfile = await readProcfile(appDir);
  const start = startOf(config.start, procfile?.web, detection);
  if (start === undefined) {
    // A root Dockerfile only when nothing else starts the app: a Node app shipping one stays a process.
    const rootFile = await rootDockerfile(appDir);
    if (rootFile !== undefined) return dockerfilePlan(appDir, rootFile, config, input.indexes, log);
    const site = await staticPlan(input, config, detection, framework, steps);
    if (site !== undefined) return site;
    const where = configPath ? `app config "${configPath}"` : "app config";
    fail(
      log,
      `no start command: the ${where} has no "start" command, there is no Procfile with a web: line, ` +
        `package.json has no "start" script, there is no app.py or main.py at the root, no index.html to serve, and no Dockerfile or Containerfile`,
    );
  }
  const worker = config.worker ?? procfile?.worker;
  const plan: ProcessPlan = {
    kind: "process",
    language: detection?.language ?? "command",
    summary: "",
    steps,
    env: config.env,
    healthcheck: config.healthcheck,
    ...(config.healthTimeoutS === undefined ? {} : { healthTimeoutS: config.healthTimeoutS }),
    ...(detection?.cache === undefined ? {} : { cache: detection.cache }),
    toolchainEnv: detection?.toolchainEnv ?? {},
    start: start.command,
    ...(worker === undefined ? {} : { worker }),
    ...(config.redis === true ? { redis: true } : {}),
    ...(config.dockerfileLines === undefined ? {} : { dockerfileLines: config.dockerfileLines }),
  };
  plan.summary = summarize(
    plan,
    detection,
    start.from,
    worker === undefined ? undefined : worker === config.worker ? "the app config" : "Procfile worker:",
  );
  log(`slipway: detected ${plan.summary}`);
  return plan;
}

/**
 * A source with no start command anywhere that builds (or is) a static site: a framework's static
 * output, else an index.html at the root. Slipway serves its files, with no app process.
 */
async function staticPlan(
  input: PlanInput,
  config: AppConfig,
  detection: LanguageDetection | undefined,
  framework: FrameworkOutput | undefined,
  steps: BuildStep[],
): Promise<StaticPlan | undefined> {
  const root = detection?.staticRoot ?? (await plainSiteRoot(input.appDir));
  if (root === undefined) return undefined;
  const from = detection?.staticRoot !== undefined && framework ? framework.name : "index.html at the root";
  const what = detection ? `${detection.language} (${detection.evidence.join(", ")})` : "static (index.html)";
  const commands = steps.length > 0 ? steps.map((s) => s.command).join("; ") : "nothing to install or build";
  const plan: StaticPlan = {
    kind: "static",
    language: detection?.language ?? "static",
    summary: `${what}: ${commands}; static: ${root} (${from})`,
    steps,
    env: config.env,
    healthcheck: config.healthcheck,
    ...(detection?.cache === undefined ? {} : { cache: detection.cache }),
    toolchainEnv: detection?.toolchainEnv ?? {},
    root,
    ...(detection?.staticRoot !== undefined && framework?.spa ? { spa: true } : {}),
  };
  input.log(`slipway: detected ${plan.summary}`);
  return plan;
}

/** `node (package.json, package-lock.json): npm ci; npm run build; start: npm start (node)`. */
function summarize(
  plan: ProcessPlan,
  detection: LanguageDetection | undefined,
  startFrom: string,
  workerFrom: string | undefined,
): string {
  const what = detection ? `${detection.language} (${detection.evidence.join(", ")})` : "no language";
  const steps =
    plan.steps.length > 0 ? plan.steps.map((s) => s.command).join("; ") : "nothing to install or build";
  const worker = plan.worker === undefined ? "" : `; worker: ${plan.worker} (${workerFrom})`;
  return `${what}: ${steps}; start: ${plan.start} (${startFrom})${worker}`;
}
