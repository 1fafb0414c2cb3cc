// Serves the console at /console under the base path: a static page with a strict content security
// policy (no inline script or style) and the esbuild bundle, built on first start when missing; and
// the hosted service's console links (/o/{org}/[host/]deployments/{id}), redirected to the console.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { notFound } from "../core/errors.ts";
import { isUuid } from "../db/ids.ts";
import type { App } from "../http/types.ts";
import { buildConsole, CONSOLE_DIST, consoleBuilt } from "./console-bundle.ts";

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

const escapeAttr = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * The page. `slipway-public-base` tells the console the server's public URL and base path (what
 * OAuth callback URLs are made of), which the page's own address may not show behind a proxy; a meta
 * tag, since the CSP allows no inline script.
 */
const page = (publicBase: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="slipway-public-base" content="${escapeAttr(publicBase)}">
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
  const { publicUrl, basePath } = app.deps.config;
  const PAGE = page(`${publicUrl}${basePath}`);
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

  // The hosted service's CLI prints <base>/o/{org}/host/deployments/{id} as the place to watch a
  // deployment. It needs no key (the console asks for one); only uuids are redirected, so no
  // arbitrary input reaches the Location header. The organization is the key's, so it is not used.
  for (const path of ["/o/:org/host/deployments/:id", "/o/:org/deployments/:id"]) {
    app.get<{ Params: { org: string; id: string } }>(path, opts, async (request, reply) => {
      const { org, id } = request.params;
      if (!isUuid(org) || !isUuid(id)) throw notFound("No such deployment link.");
      return reply.redirect(`${basePath}/console/#/deployments/${id.toLowerCase()}`, 302);
    });
  }
}
