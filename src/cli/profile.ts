// Profiles: `$XDG_CONFIG_HOME/slipway/config.json` (mode 0600, it holds API keys). SLIPWAY_URL,
// SLIPWAY_API_KEY and the --url/--api-key/--profile/--workspace flags take precedence.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { UsageError } from "./args.ts";

export interface Profile {
  url: string;
  api_key?: string;
  workspace?: string;
}

export interface ProfileFile {
  current?: string;
  profiles: Record<string, Profile>;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  return join(base, "slipway", "config.json");
}

export function readProfiles(path = configPath()): ProfileFile {
  if (!existsSync(path)) return { profiles: {} };
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<ProfileFile>;
    return { current: parsed.current, profiles: parsed.profiles ?? {} };
  } catch {
    throw new UsageError(`${path} is not valid JSON: fix or remove it, then run slipway login again.`);
  }
}

export function writeProfiles(file: ProfileFile, path = configPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  // An existing file keeps its mode on write: make sure it is private.
  chmodSync(path, 0o600);
}

export interface Credentials {
  url: string;
  apiKey?: string;
  workspace?: string;
  profile?: string;
}

/** Flags, then environment, then the named (or current) profile. */
export function resolveCredentials(
  flags: { url?: string; apiKey?: string; profile?: string; workspace?: string },
  env: NodeJS.ProcessEnv = process.env,
): Credentials {
  const file = readProfiles(configPath(env));
  const name = flags.profile ?? env.SLIPWAY_PROFILE ?? file.current ?? "default";
  const profile = file.profiles[name];
  if (flags.profile && !profile)
    throw new UsageError(`No profile named ${flags.profile}: run slipway login --profile ${flags.profile}.`);
  const url = flags.url ?? env.SLIPWAY_URL ?? profile?.url;
  if (!url) throw new UsageError("No server: run slipway login --url URL, or set SLIPWAY_URL.");
  return {
    url,
    apiKey: flags.apiKey ?? env.SLIPWAY_API_KEY ?? profile?.api_key,
    workspace: flags.workspace ?? profile?.workspace,
    profile: profile ? name : undefined,
  };
}
