// `slipway listener` (and `slipway listener render`) arguments and their environment fallbacks,
// parsed and checked once here.
import { ConfigError } from "../config.ts";
import type { ListenerOptions } from "./listener.ts";
import type { ManifestOptions, Routing } from "./manifests/types.ts";

/** The flags that shape the objects, shared by the listener and `render`. */
const MANIFEST_USAGE = `  --domain D             host <name>.<D> for every deployment (default: the control plane's apps domain)
  --ingress-class C      route with Ingresses of class C (default: Ingresses, the cluster's default class)
  --gateway [NS/]NAME    route with Gateway API HTTPRoutes on this Gateway instead
  --no-routing           create no Ingress or HTTPRoute
  --ingress-namespace NS the ingress controller's namespace: the only other one whose pods may reach apps
                         (default ingress-nginx; with --gateway NS/NAME, NS)
  --pod-security L       baseline (default) or restricted: the Pod Security level app pods pass
  --postgres-image IMG   image of databases asked by db_* (default docker.io/library/postgres:16)
  --redis-image IMG      image of caches asked by redis_* (default docker.io/library/redis:7)`;

export const LISTENER_USAGE = `Usage: slipway listener --url URL --api-key KEY --listener-id ID [options]
       slipway listener render --desired FILE|- [--output yaml|json] [options]

  --url URL              the Slipway control plane (env SLIPWAY_URL)
  --api-key KEY          a listener key: POST /v1/api-keys {"role":"listener"} (env SLIPWAY_API_KEY)
  --listener-id ID       the listener's id (env SLIPWAY_LISTENER_ID)
  --kubeconfig PATH      cluster access (env KUBECONFIG; in a pod, its service account)
${MANIFEST_USAGE}
  --health-port P        answer /healthz and /readyz on port P (the pod's probes)
  --namespace NS         a namespace to prune in (repeatable; the listener's own are sent by the control plane)
  --wait S               long-poll wait, 1-60 seconds (default 30)
  --resync S             re-read rollout state every S seconds (default 10)
  --heartbeat S          report at least every S seconds (default 30)`;

export const RENDER_USAGE = `Usage: slipway listener render --desired FILE|- [--output yaml|json] [options]

Prints the objects the listener would apply for a desired state (the answer of
GET /v2/listeners/{id}/desired), without a cluster: YAML documents, or a JSON List.

  --desired FILE         the desired state as JSON; - reads it from stdin
  --output F             yaml (default) or json
${MANIFEST_USAGE}`;

type Env = Record<string, string | undefined>;

function seconds(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number of seconds from 1 to ${max}, got "${raw}".`);
  }
  return Number(raw);
}

const MANIFEST_FLAGS = [
  "domain",
  "ingress-class",
  "gateway",
  "ingress-namespace",
  "pod-security",
  "postgres-image",
  "redis-image",
];

export interface ManifestFlags {
  flags: Map<string, string[]>;
  one(flag: string): string | undefined;
  manifests: Omit<ManifestOptions, "listenerId">;
  domain?: string;
}

/** Parses `argv` with the manifest flags and `more` value flags; anything else is refused. */
export function parseManifestFlags(argv: string[], more: string[], usage = RENDER_USAGE): ManifestFlags {
  const flags = new Map<string, string[]>();
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--no-routing") {
      switches.add(arg);
      continue;
    }
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new ConfigError(`unexpected argument "${arg}".\n${usage}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new ConfigError(`--${m[1]} needs a value.`);
    flags.set(m[1] ?? "", [...(flags.get(m[1] ?? "") ?? []), value]);
  }
  const known = new Set([...MANIFEST_FLAGS, ...more]);
  for (const f of flags.keys()) if (!known.has(f)) throw new ConfigError(`unknown option --${f}.\n${usage}`);
  const one = (f: string) => flags.get(f)?.at(-1);
  const gateway = one("gateway");
  if (gateway && one("ingress-class"))
    throw new ConfigError("--gateway and --ingress-class exclude each other.");
  let routing: Routing = { kind: "ingress", className: one("ingress-class") };
  if (gateway) {
    const [a, b] = gateway.split("/");
    routing = b
      ? { kind: "gateway", gatewayNamespace: a, gatewayName: b }
      : { kind: "gateway", gatewayName: a ?? "" };
  }
  if (switches.has("--no-routing")) routing = { kind: "none" };
  const podSecurity = one("pod-security") ?? "baseline";
  if (podSecurity !== "baseline" && podSecurity !== "restricted")
    throw new ConfigError(`--pod-security must be baseline or restricted, got "${podSecurity}".`);
  const ingressNamespace =
    one("ingress-namespace") ?? (routing.kind === "gateway" ? routing.gatewayNamespace : "ingress-nginx");
  return {
    flags,
    one,
    manifests: {
      routing,
      podSecurity,
      ingressNamespace,
      postgresImage: one("postgres-image") ?? "docker.io/library/postgres:16",
      redisImage: one("redis-image") ?? "docker.io/library/redis:7",
    },
    domain: one("domain"),
  };
}

export function parseListenerArgs(argv: string[], env: Env, log: (line: string) => void): ListenerOptions {
  const more = [
    "url",
    "api-key",
    "listener-id",
    "kubeconfig",
    "namespace",
    "health-port",
    "wait",
    "resync",
    "heartbeat",
  ];
  const { flags, one, manifests, domain } = parseManifestFlags(argv, more, LISTENER_USAGE);
  const need = (f: string, envName: string) => {
    const v = one(f) ?? env[envName];
    if (!v) throw new ConfigError(`--${f} (or ${envName}) is required.`);
    return v;
  };
  const url = need("url", "SLIPWAY_URL");
  try {
    new URL(url);
  } catch {
    throw new ConfigError(
      `--url (SLIPWAY_URL) must be a URL such as https://slipway.example.com, got "${url}".`,
    );
  }
  const listenerId = need("listener-id", "SLIPWAY_LISTENER_ID");
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(listenerId)) {
    throw new ConfigError(`--listener-id (SLIPWAY_LISTENER_ID) must be a uuid, got "${listenerId}".`);
  }
  const healthPort = one("health-port");
  if (
    healthPort !== undefined &&
    (!/^\d+$/.test(healthPort) || Number(healthPort) < 1 || Number(healthPort) > 65535)
  )
    throw new ConfigError(`--health-port must be a port number from 1 to 65535, got "${healthPort}".`);
  return {
    controlPlane: { url, apiKey: need("api-key", "SLIPWAY_API_KEY"), listenerId },
    kubeconfig: one("kubeconfig") ?? env.KUBECONFIG,
    manifests,
    domain,
    healthPort: healthPort === undefined ? undefined : Number(healthPort),
    namespaces: flags.get("namespace") ?? [],
    waitSeconds: seconds("--wait", one("wait"), 30, 60),
    resyncMs: seconds("--resync", one("resync"), 10, 3600) * 1000,
    heartbeatMs: seconds("--heartbeat", one("heartbeat"), 30, 3600) * 1000,
    log,
  };
}
