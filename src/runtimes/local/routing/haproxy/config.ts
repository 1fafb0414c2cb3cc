import { join } from "node:path";
import { REQUEST_RING } from "./request-log.ts";

/**
 * The HAProxy configuration of the apps edge's front (docs/edge.md), as text: nothing here runs.
 * HAProxy serves the public apps port. A host found in the hosts map goes to its deployment's
 * backend (a slot), whose servers are the deployment's ready processes; everything else goes to the
 * Node edge on loopback: unknown hosts (its 404), deployments scaled to zero (its cold-start hold),
 * static sites, upgrades (WebSocket) and event streams, whose in-flight counts it keeps while they
 * last. Between reloads the front changes servers and map entries through the runtime API; a
 * reload (only when it needs more slots) writes the state of that moment.
 */

export interface SlotState {
  /** Backend name: `s<n>`. */
  slot: string;
  /** The servers in use, by name (`r<i>`, 1 to SERVERS_PER_SLOT); the others are written disabled. */
  servers: { name: string; address: string; drain: boolean }[];
}

/**
 * Servers a slot has, declared in the file: dynamic servers (`add server`) of HAProxy 2.6 keep no
 * idle connections to the app, so every request would open one. Enough for a revision at its
 * maximum scale and the one it replaces, draining, with room for a port reused meanwhile.
 */
export const SERVERS_PER_SLOT = 24;

export interface HaproxyConfig {
  /** Where HAProxy keeps its sockets, pid file and hosts map. */
  dir: string;
  listen: { host: string; port: number };
  /** The Node edge, on loopback. */
  edgePort: number;
  maxconn: number;
  /** `auto` or a count of threads. */
  threads: string;
  /** Unprivileged user and group once the port is bound (when Slipway runs as root). */
  user?: { user: string; group: string };
  slots: SlotState[];
  /** How long an old process may finish its connections after a reload. */
  hardStopAfterS: number;
}

export const HOSTS_MAP = "hosts.map";
export const ADMIN_SOCKET = "admin.sock";
export const MASTER_SOCKET = "master.sock";
export const PID_FILE = "haproxy.pid";

/**
 * An app process's server options: a refused connection takes it out at once (the request is
 * retried on another, or on the Node edge, the backup, when none is left), and a TCP check brings
 * it back.
 */
export const SERVER_OPTIONS = "check inter 2s fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down";

/** An address:port HAProxy takes (IPv4, or IPv6 in brackets). */
export function serverAddress(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** The hosts map: `host slot` lines (hosts are lower-case LDH names; others are left out). */
export function renderHostsMap(entries: [host: string, slot: string][]): string {
  return entries
    .filter(([host]) => /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(host))
    .map(([host, slot]) => `${host} ${slot}\n`)
    .join("");
}

export function renderHaproxyConfig(c: HaproxyConfig): string {
  const backends = c.slots.map((s) => {
    const lines = [`backend ${s.slot}`, "  balance roundrobin"];
    for (let i = 1; i <= SERVERS_PER_SLOT; i++) {
      const r = s.servers.find((x) => x.name === `r${i}`);
      lines.push(
        r === undefined
          ? `  server r${i} 127.0.0.1:1 disabled ${SERVER_OPTIONS}`
          : `  server r${i} ${r.address} ${SERVER_OPTIONS}${r.drain ? " weight 0" : ""}`,
      );
    }
    lines.push(`  server edge 127.0.0.1:${c.edgePort} backup`);
    return lines.join("\n");
  });
  return `# Written by Slipway (src/runtimes/local/routing/haproxy/config.ts) at each reload.
global
  master-worker
  pidfile ${join(c.dir, PID_FILE)}
  stats socket ${join(c.dir, ADMIN_SOCKET)} mode 600 level admin expose-fd listeners
  # The request log's reader is a CLI session: idle that long (no request at all), it is dropped.
  stats timeout 1d
  maxconn ${c.maxconn}
${c.threads === "auto" ? "" : `  nbthread ${c.threads}\n`}${c.user === undefined ? "" : `  user ${c.user.user}\n  group ${c.user.group}\n`}  hard-stop-after ${c.hardStopAfterS}s

# The request log (request-log.ts): one line a request, read by Slipway over the admin socket.
ring ${REQUEST_RING}
  format raw
  maxlen 256
  size 2097152

defaults
  mode http
  option dontlognull
  option http-keep-alive
  timeout connect 5s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
  timeout http-request 30s
  timeout http-keep-alive 75s
  retries 2
  option redispatch 1
  retry-on conn-failure empty-response
  http-reuse safe

frontend apps
  bind ${serverAddress(c.listen.host, c.listen.port)}
  log ring@${REQUEST_RING} len 256 format raw local0 info
  log-format "%b %ST %Ta"
  option forwardfor
  http-request set-header X-Forwarded-Host %[req.hdr(host)] unless { req.hdr(x-forwarded-host) -m found }
  http-request set-header X-Forwarded-Proto http unless { req.hdr(x-forwarded-proto) -m found }
  # Upgrades and event streams go to the Node edge, which counts them while they last.
  use_backend edge if { req.hdr(upgrade) -m found }
  use_backend edge if { req.hdr(accept) -m sub text/event-stream }
  # A host with a trailing dot is not in the map: the Node edge serves it.
  use_backend %[req.hdr(host),field(1,:),lower,map_str(${join(c.dir, HOSTS_MAP)},edge)]
  default_backend edge

backend edge
  # What the Node edge answers is in its own metrics: not logged twice.
  http-request set-log-level silent
  server edge 127.0.0.1:${c.edgePort}

${backends.join("\n\n")}
`;
}
