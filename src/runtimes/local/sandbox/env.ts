import { join } from "node:path";

/**
 * The environment every build command and app process starts from. Deliberately not the server's
 * own: Slipway's database URL, master key and tokens must never reach user code. `home` is the
 * deployment's own HOME as the command sees it (the npm cache lives in it, so no tenant's cache is
 * another's); `path` the PATH it sees (the sandbox's, or the server's when unsandboxed).
 */
export function baseEnv(home: string, path?: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: path || process.env.PATH || "/usr/local/bin:/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    npm_config_cache: join(home, ".npm"),
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
  };
  if (process.env.TZ) env.TZ = process.env.TZ;
  return env;
}
