// Serves the console at /console under the base path: a static page with a strict content security
// policy (no inline script or style) and the esbuild bundle, built on first start when missing.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { App } from "../http/types.ts";
import { buildConsole, CONSOLE_DIST, consoleBuilt } from "./build.ts";

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Slipway console</title>
<link rel="stylesheet" href="assets/app.css">
<script type="module" src="assets/app.js"></script>
</head>
<body><div id="app"></div></body>
</html>
`;

const ASSETS: Record<string, string> = {
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  "app.js.map": "application/json",
  "app.css.map": "application/json",
};

let building: Promise<void> | undefined;

export async function consoleRoutes(app: App): Promise<void> {
  const headers = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  const ensureBuilt = () => {
    if (consoleBuilt()) return Promise.resolve();
    building ??= buildConsole();
    return building;
  };
  const opts = { schema: { hide: true }, config: { auth: { public: true } } } as const;
  app.get("/console", opts, async (request, reply) => {
    // The page's asset paths are relative to /console/.
    const url = request.url.split("?")[0] ?? "";
    if (!url.endsWith("/")) return reply.redirect(`${url}/`, 308);
    await ensureBuilt();
    return reply.headers(headers).type("text/html; charset=utf-8").send(PAGE);
  });
  app.get<{ Params: { file: string } }>("/console/assets/:file", opts, async (request, reply) => {
    const type = ASSETS[request.params.file];
    if (!type) return reply.code(404).send({ detail: "No such console asset." });
    await ensureBuilt();
    const body = await readFile(join(CONSOLE_DIST, request.params.file));
    return reply
      .headers({ ...headers, "cache-control": "no-cache" })
      .type(type)
      .send(body);
  });
}
