import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/** Debian's own wheels (python3-setuptools-whl, python3-wheel-whl): PEP 517 builds fetch them. */
export const DEBIAN_WHEELS = "/usr/share/python-wheels";

/** PEP 503's normalized project name: lower case, runs of `-_.` as one `-`. */
export function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

// Writes a wheel (PEP 427) with the stdlib's zipfile: a pure-Python package needs no build tools.
const WHEEL_WRITER = `
import base64, hashlib, json, sys, zipfile
out, name, version, deps, files = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5])
dist = name.replace("-", "_") + "-" + version
info = dist + ".dist-info/"
files[info + "METADATA"] = "Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n%s" % (name, version, "".join("Requires-Dist: %s\\n" % d for d in deps))
files[info + "WHEEL"] = "Wheel-Version: 1.0\\nGenerator: slipway-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
record = []
path = "%s/%s-py3-none-any.whl" % (out, dist)
with zipfile.ZipFile(path, "w") as z:
    for f, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (f, digest, len(data)))
        z.writestr(f, data)
    record.append(info + "RECORD,,")
    z.writestr(info + "RECORD", "\\n".join(record) + "\\n")
print(path)
`;

/** A pure-Python wheel of `name` `version` holding `files` (module paths to their source), in `dir`. */
export function makeWheel(
  dir: string,
  name: string,
  version: string,
  files: Record<string, string>,
  requires: string[] = [],
): string {
  return execFileSync(
    "/usr/bin/python3",
    ["-c", WHEEL_WRITER, dir, name, version, JSON.stringify(requires), JSON.stringify(files)],
    { encoding: "utf8" },
  ).trim();
}

export interface PythonIndex {
  /** `http://127.0.0.1:<port>/simple`: what SLIPWAY_PIP_INDEX_URL names. */
  url: string;
  /** Project pages pip asked for (normalized names), in order. */
  asked: string[];
  close(): Promise<void>;
}

/**
 * A PEP 503 simple index on loopback serving the wheels in `dirs` (and Debian's setuptools and
 * wheel): `/simple/` lists projects, `/simple/<name>/` links their files with sha256 fragments.
 */
export async function startPythonIndex(dirs: string[]): Promise<PythonIndex> {
  const files = new Map<string, string>();
  for (const dir of [...dirs, DEBIAN_WHEELS]) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) if (f.endsWith(".whl")) files.set(f, join(dir, f));
  }
  const projects = new Map<string, string[]>();
  for (const f of files.keys()) {
    const project = normalize(f.split("-")[0] ?? f);
    projects.set(project, [...(projects.get(project) ?? []), f]);
  }
  const asked: string[] = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://index").pathname);
    const page = (body: string) => {
      res.setHeader("content-type", "text/html");
      res.end(`<!DOCTYPE html><html><body>\n${body}</body></html>\n`);
    };
    if (path === "/simple/") {
      page([...projects.keys()].map((p) => `<a href="/simple/${p}/">${p}</a>\n`).join(""));
      return;
    }
    const project = /^\/simple\/([^/]+)\/$/.exec(path)?.[1];
    if (project !== undefined) {
      asked.push(normalize(project));
      const list = projects.get(normalize(project));
      if (list === undefined) {
        res.statusCode = 404;
        res.end("not found");
        return;
      }
      page(
        list
          .map((f) => {
            const sha = createHash("sha256")
              .update(readFileSync(files.get(f) ?? ""))
              .digest("hex");
            return `<a href="/files/${f}#sha256=${sha}">${f}</a>\n`;
          })
          .join(""),
      );
      return;
    }
    const file = /^\/files\/([^/]+)$/.exec(path)?.[1];
    const full = file === undefined ? undefined : files.get(file);
    if (full === undefined) {
      res.statusCode = 404;
      res.end("not found");
      return;
    }
    res.setHeader("content-type", "application/octet-stream");
    // As PyPI's files are: pip keeps them in its cache (PIP_CACHE_DIR) only when told it may.
    res.setHeader("cache-control", "max-age=365000000, immutable, public");
    res.end(readFileSync(full));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/simple`,
    asked,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
