import { createReadStream } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, sep } from "node:path";

/** Content-Types by extension; anything else is sent as bytes. */
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".webmanifest": "application/manifest+json",
  ".txt": "text/plain; charset=utf-8",
  ".xml": "application/xml",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".avif": "image/avif",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".otf": "font/otf",
  ".wasm": "application/wasm",
  ".pdf": "application/pdf",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".mp3": "audio/mpeg",
};

export function contentTypeOf(path: string): string {
  return TYPES[extname(path).toLowerCase()] ?? "application/octet-stream";
}

function sendJson(
  res: ServerResponse,
  status: number,
  detail: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ detail });
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

/**
 * A static revision's files, served by the apps router with no app process: `/` and directories
 * are their index.html, `/about` may be about.html, a missing file is 404 (the site's own 404.html
 * when it has one). A single-page app answers a missing path without an extension with its root
 * index.html, so client-side routes load; a missing `/app.js` is still 404. Nothing outside the
 * root is ever read: no `..`, no dotfiles (.env, .git), no symlink pointing out.
 */
export class StaticSite {
  private inflight = 0;
  private idle: (() => void)[] = [];
  private realRoot: Promise<string> | undefined;

  constructor(
    /** The served directory on this machine. */
    readonly root: string,
    readonly spa: boolean,
  ) {}

  /** Answers one request from the files; settles when the response has ended. */
  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inflight++;
    res.once("close", () => {
      this.inflight--;
      if (this.inflight === 0) for (const wake of this.idle.splice(0)) wake();
    });
    req.resume();
    try {
      await this.answer(req, res);
    } catch {
      if (!res.headersSent) sendJson(res, 500, "The file could not be read.");
      else res.destroy();
    }
  }

  /** Resolves once no request is being answered, or after `ms`. */
  whenIdle(ms: number): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "GET" && req.method !== "HEAD") {
      sendJson(res, 405, "A static site answers GET and HEAD only.", { allow: "GET, HEAD" });
      return;
    }
    const rawPath = (req.url ?? "/").split("?")[0] ?? "/";
    let path: string;
    try {
      path = decodeURIComponent(rawPath);
    } catch {
      sendJson(res, 400, "The path is not valid percent-encoding.");
      return;
    }
    const segments = path.split("/").filter((s) => s !== "");
    // `..`, `\`, NUL and dotfiles never name a file of the site (the router sees raw, unnormalized paths).
    const refused = segments.some(
      (s) => s === ".." || s.includes("\\") || s.includes("\0") || (s.startsWith(".") && s !== ".well-known"),
    );
    if (!refused) {
      const base = join(...["/", ...segments]);
      const candidates = path.endsWith("/") ? [join(base, "index.html")] : [base, `${base}.html`];
      for (const candidate of candidates) {
        const found = await this.file(candidate);
        if (found === "directory") {
          // A directory's index.html, under its own URL so its relative links resolve.
          const query = (req.url ?? "").slice(rawPath.length);
          res.writeHead(301, { location: `${rawPath}/${query}`, "content-length": 0 });
          res.end();
          return;
        }
        if (found !== undefined) return this.send(req, res, found, 200);
      }
      if (this.spa && !extname(segments.at(-1) ?? "")) {
        const index = await this.file("/index.html");
        if (typeof index === "object") return this.send(req, res, index, 200);
      }
    }
    const notFound = await this.file("/404.html");
    if (typeof notFound === "object") return this.send(req, res, notFound, 404);
    sendJson(res, 404, `No file at ${rawPath}.`);
  }

  /** A regular file inside the root (after symlinks), "directory", or undefined. */
  private async file(relative: string): Promise<{ path: string; size: number } | "directory" | undefined> {
    this.realRoot ??= realpath(this.root);
    const root = await this.realRoot;
    let real: string;
    try {
      real = await realpath(join(root, relative));
    } catch {
      return undefined;
    }
    if (real !== root && !real.startsWith(root + sep)) return undefined;
    const info = await stat(real).catch(() => undefined);
    if (info?.isDirectory()) return relative === "/" ? this.file("/index.html") : "directory";
    return info?.isFile() ? { path: real, size: info.size } : undefined;
  }

  private send(
    req: IncomingMessage,
    res: ServerResponse,
    file: { path: string; size: number },
    status: number,
  ): Promise<void> {
    res.writeHead(status, {
      "content-type": contentTypeOf(file.path),
      "content-length": file.size,
      "x-content-type-options": "nosniff",
    });
    if (req.method === "HEAD") {
      res.end();
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const stream = createReadStream(file.path);
      stream.once("error", reject);
      stream.once("end", resolve);
      stream.pipe(res);
    });
  }
}
