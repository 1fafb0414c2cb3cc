import { resolve } from "node:path";
import type { BuildRecord } from "../../build/app-config.ts";
import { exists } from "../../shared/files.ts";
import { RevisionGroup } from "../processes/group.ts";
import type { Traffic } from "../scaling/traffic.ts";
import { StaticSite } from "./static-site.ts";

/**
 * A static revision as the slot switches to it: a group with no process whose files the router
 * serves. Switching and draining are the same as for processes, so in-flight requests of the
 * replaced revision finish from its own files.
 */
export async function staticGroup(o: {
  revisionId: string;
  appDir: string;
  built: Extract<BuildRecord, { kind: "static" }>;
  traffic: Traffic;
  drainMs: number;
  tickMs: number;
  log: (line: string) => void;
  fail: (message: string) => never;
}): Promise<RevisionGroup> {
  const root = resolve(o.appDir, o.built.root);
  if (!(await exists(resolve(root, "index.html"))))
    o.fail(`the static site's directory "${o.built.root}" has no index.html`);
  const none = { min: 0, max: 0, target: 1, windowMs: 1000, cooldownMs: 1000 };
  const group = new RevisionGroup({
    revisionId: o.revisionId,
    make: () => {
      throw new Error("a static revision has no processes");
    },
    web: 0,
    queue: 0,
    log: o.log,
    traffic: o.traffic,
    scaling: { ...none, tickMs: o.tickMs },
    queueScaling: { min: 0, max: 0, target: 1, cpus: 1 },
    drainMs: o.drainMs,
    site: new StaticSite(root, o.built.spa),
  });
  const spa = o.built.spa ? "; a missing path without an extension gets index.html" : "";
  o.log(`slipway: static site: serving ${o.built.root} with no app process${spa}`);
  return group;
}
