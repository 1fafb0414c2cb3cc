import type { Layout } from "./layout.ts";

/**
 * The environment every build command and app process starts from. Deliberately not the server's
 * own: Slipway's database URL, master key and tokens must never reach user code.
 */
export function baseEnv(layout: Layout): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin",
    HOME: layout.homeDir,
    LANG: "C.UTF-8",
    npm_config_cache: layout.npmCacheDir,
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
  };
  if (process.env.TZ) env.TZ = process.env.TZ;
  return env;
}

/** Environment for git: no prompts, no system config, English messages we can match. */
export function gitEnv(layout: Layout): Record<string, string> {
  return {
    PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin",
    HOME: layout.homeDir,
    LANG: "C",
    LC_ALL: "C",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
  };
}
