import type { AppConfig } from "../app-config.ts";
import type { BuildStep, DependencyCache } from "./types.ts";

/** What a language's detector found in a source. */
export interface LanguageDetection {
  /** `node`, `python`, … */
  language: string;
  /** The files that told, for the log line: `package-lock.json`, `requirements.txt`, … */
  evidence: string[];
  /** Its install and build commands, in order (source_config's own commands replace them). */
  steps: BuildStep[];
  /** The language's own start command (package.json `start`, a framework's server), if any. */
  start?: string;
  /** Where `start` comes from, for the log line (`app.py at the root`); default: the language. */
  startFrom?: string;
  cache?: DependencyCache;
  toolchainEnv?: Record<string, string>;
  /** A build whose output is a static site with no server: the directory to serve. */
  staticRoot?: string;
}

/**
 * The package indexes builds install from (SLIPWAY_NPM_REGISTRY, SLIPWAY_PIP_INDEX_URL,
 * SLIPWAY_PIP_EXTRA_INDEX_URL), given to every build, local and image; unset: each tool's default.
 */
export interface PackageIndexes {
  npm?: string;
  pip?: string;
  pipExtra: string[];
}

/** What a detector reads: the source, its app config and where packages come from. */
export interface DetectInput {
  appDir: string;
  config: AppConfig;
  indexes: PackageIndexes;
  log: (line: string) => void;
}

/** One language: undefined when the source is not of it. */
export type Detector = (input: DetectInput) => Promise<LanguageDetection | undefined>;
