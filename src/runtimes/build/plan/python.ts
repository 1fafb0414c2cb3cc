import { join } from "node:path";
import { exists } from "../../shared/files.ts";
import { isLocalPath } from "../framework-config.ts";
import type { Detector, LanguageDetection, PackageIndexes } from "./detection.ts";
import { pickInterpreter, requestedVersion, systemInterpreters } from "./python/interpreter.ts";
import { PIPFILE_REQUIREMENTS, writePipfileRequirements } from "./python/pipfile.ts";
import type { BuildStep } from "./types.ts";

/** The files that make a source Python, the first found deciding how it installs. */
const MANIFESTS = ["requirements.txt", "Pipfile.lock", "pyproject.toml"] as const;
/** Files that say the source is Python without installing anything. */
const HINTS = [".python-version", "runtime.txt", "app.py", "main.py"];
/** Started as `python <file>` when neither the app config nor a Procfile names a start command. */
const ENTRY_FILES = ["app.py", "main.py"];

/**
 * pip's settings for the configured indexes, its cache in the deployment's own HOME (a cache shared
 * across deployments would be tamperable), and no prompts or version checks in a build log.
 */
export function pipEnv(indexes: PackageIndexes): Record<string, string> {
  const env: Record<string, string> = {
    PIP_DISABLE_PIP_VERSION_CHECK: "1",
    PIP_NO_INPUT: "1",
    PIP_CACHE_DIR: "{home}/.cache/pip",
  };
  if (indexes.pip !== undefined) env.PIP_INDEX_URL = indexes.pip;
  if (indexes.pipExtra.length > 0) env.PIP_EXTRA_INDEX_URL = indexes.pipExtra.join(" ");
  // pip refuses plain-http indexes unless their hosts are trusted: a configured mirror is.
  const plain = [indexes.pip, ...indexes.pipExtra].flatMap((url) => {
    try {
      const u = new URL(url ?? "");
      return u.protocol === "http:" ? [u.host] : [];
    } catch {
      return [];
    }
  });
  if (plain.length > 0) env.PIP_TRUSTED_HOST = [...new Set(plain)].join(" ");
  return env;
}

/**
 * A Python source: `requirements.txt`, `Pipfile.lock` (its pinned packages, installed by pip) or
 * `pyproject.toml` (a PEP 517 `pip install .`), or a bare `app.py` / `main.py`. Everything goes
 * into a virtualenv in the app directory (`.venv`), made by the interpreter the source asks for,
 * and the app starts inside it.
 */
export const detectPython: Detector = async ({ appDir, config, indexes, log }) => {
  const present = async (name: string) => exists(join(appDir, name));
  let manifest: (typeof MANIFESTS)[number] | undefined;
  for (const name of MANIFESTS) if (manifest === undefined && (await present(name))) manifest = name;
  const hints: string[] = [];
  for (const name of HINTS) if (await present(name)) hints.push(name);
  // A framework config that asks for a Python or names dependencies makes the source Python too.
  const deps = config.dependencies ?? [];
  if (manifest === undefined && hints.length === 0 && deps.length === 0 && config.pythonVersion === undefined)
    return undefined;

  const request = await requestedVersion(appDir, config.pythonVersion);
  const python = pickInterpreter(request, await systemInterpreters(), log);
  log(
    `slipway: python ${python.version} (${python.path})` +
      (request === undefined ? ", the machine's default" : `, as ${request.from} asks (${request.version})`),
  );

  const steps: BuildStep[] = [{ label: "toolchain", command: `${python.path} -m venv .venv` }];
  const keyFiles = [".python-version", "runtime.txt"].filter((f) => hints.includes(f));
  let cache: LanguageDetection["cache"];
  if (manifest === "requirements.txt") {
    steps.push({ label: "install", command: "pip install -r requirements.txt" });
    cache = { dirs: [".venv"], keyFiles: ["requirements.txt", ...keyFiles] };
  } else if (manifest === "Pipfile.lock") {
    const count = await writePipfileRequirements(appDir, log);
    log(`slipway: ${count} pinned package(s) of Pipfile.lock "default" written to ${PIPFILE_REQUIREMENTS}`);
    steps.push({ label: "install", command: `pip install -r ${PIPFILE_REQUIREMENTS}` });
    cache = { dirs: [".venv"], keyFiles: ["Pipfile.lock", ...keyFiles] };
  } else if (manifest === "pyproject.toml") {
    // No dependency cache: `pip install .` copies the app itself into .venv, so a reused .venv would run old code.
    steps.push({ label: "install", command: "pip install ." });
  }
  if (deps.length > 0) {
    // The framework config's own list: `.`, local packages and requirement specs, after the manifest's.
    steps.push({ label: "dependencies", command: `pip install ${deps.map(shellWord).join(" ")}` });
    // A local package is copied into .venv as it is now: a reused .venv would run its old code.
    if (deps.some(isLocalPath)) cache = undefined;
  }

  const detection: LanguageDetection = {
    language: "python",
    evidence: [
      ...(manifest === undefined ? [] : [manifest]),
      ...(deps.length > 0 ? ["framework config dependencies"] : []),
      ...hints.filter((h) => !ENTRY_FILES.includes(h)),
    ],
    steps,
    toolchainEnv: {
      VIRTUAL_ENV: "{app}/.venv",
      PATH: "{app}/.venv/bin:{path}",
      PYTHONUNBUFFERED: "1",
      ...pipEnv(indexes),
    },
    ...(cache === undefined ? {} : { cache }),
  };
  const entry = ENTRY_FILES.find((f) => hints.includes(f));
  if (entry !== undefined) {
    detection.start = `python ${entry}`;
    detection.startFrom = `${entry} at the root`;
  }
  if (detection.evidence.length === 0) detection.evidence.push(entry ?? "python");
  return detection;
};

/** One word for `sh -c`: a requirement spec holds `>`, `<`, `;` and spaces the shell must not read. */
const shellWord = (word: string) => `'${word.replace(/'/g, "'\\''")}'`;
