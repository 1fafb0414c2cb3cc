/**
 * A plan's `toolchainEnv` is decided before Slipway knows where the commands will see the app (the
 * sandbox shows it at /app, an unsandboxed build at its host path, an image at /app) or what PATH
 * and HOME they start with. Its values name those as `{app}`, `{path}` and `{home}`, filled in
 * here for the environment the commands run in (a virtualenv's `PATH={app}/.venv/bin:{path}`).
 */
export function resolveToolchainEnv(
  toolchain: Record<string, string>,
  base: Record<string, string>,
  appDir: string,
): Record<string, string> {
  const fill: Record<string, string> = {
    app: appDir,
    path: base.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    home: base.HOME ?? "/",
  };
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(toolchain)) {
    out[name] = value.replace(/\{(app|path|home)\}/g, (whole, key: string) => fill[key] ?? whole);
  }
  return out;
}
