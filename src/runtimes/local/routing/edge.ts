import { createServer } from "node:net";
import { join } from "node:path";
import type { Config } from "../../../config.ts";
import type { RuntimeLogger } from "../options.ts";
import { HaproxyFront } from "./haproxy/front.ts";
import type { AppsRouter } from "./router.ts";

/** SLIPWAY_EDGE and its HAProxy settings (config/edge.ts). */
export type EdgeSettings = Config["apps"]["edge"];

export interface OpenedEdge {
  /** The apps port clients connect to. */
  port: number;
  /** The HAProxy front when it serves that port; undefined when the Node edge does. */
  front: HaproxyFront | undefined;
}

/** A free port on `host` (HAProxy cannot be asked for port 0 and tell which it got). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const a = s.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Opens the apps port (docs/edge.md). With HAProxy (SLIPWAY_EDGE=auto or haproxy) the Node edge
 * listens on a loopback port behind it; `auto` falls back to the Node edge on the apps port, with a
 * warning naming why, when HAProxy is absent or does not start; `haproxy` then fails the start.
 */
export async function openEdge(
  router: AppsRouter,
  o: {
    settings: EdgeSettings;
    port: number;
    host: string;
    dataDir: string;
    drainMs: number;
    logger: RuntimeLogger;
    /** HTTPS is on: the Node edge serves the plain port too (its redirect and ACME answers). */
    tls: boolean;
  },
): Promise<OpenedEdge> {
  // Every plain request is then a redirect or an ACME answer, which HAProxy would pass by for
  // running apps: the Node edge serves both ports.
  if (o.settings.kind !== "node" && o.tls)
    o.logger.info(
      { edge: o.settings.kind },
      "apps edge: HTTPS is on, so the Node edge serves both apps ports (docs/edge.md)",
    );
  if (o.settings.kind !== "node" && !o.tls) {
    const edgePort = await router.listen(0, "127.0.0.1", { front: true });
    const port = o.port === 0 ? await freePort(o.host) : o.port;
    const front = new HaproxyFront({
      binary: o.settings.haproxy,
      dir: join(o.dataDir, "edge", "haproxy"),
      listen: { host: o.host, port },
      workers: o.settings.threads,
      drainMs: o.drainMs,
      logger: o.logger,
      router,
    });
    try {
      await front.start(edgePort);
      return { port, front };
    } catch (err) {
      await front.close().catch(() => undefined);
      if (o.settings.kind === "haproxy") throw err;
      o.logger.warn(
        { reason: err instanceof Error ? err.message : String(err) },
        "apps edge: HAProxy is not used (SLIPWAY_EDGE=auto): the Node edge serves the apps port alone (docs/edge.md)",
      );
    }
  }
  return { port: await router.listen(o.port, o.host), front: undefined };
}
