// The API server's validation beyond the OpenAPI schemas (apimachinery and the apps/core
// validators), written from the Kubernetes API conventions, not from Slipway's code: object
// names, label and annotation keys and values, selectors matching templates, requests not above
// limits, Ingress hosts. The stand-in refuses with 422 what these find; the manifest tests use
// them directly. Kept apart from src/core/spec/kubernetes-names.ts on purpose: a test against
// the code's own rules could not catch a rule the code gets wrong.
import type { Obj } from "./fields.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

export const dnsLabel = (v: string) => v.length <= 63 && DNS_LABEL.test(v);
export const dnsSubdomain = (v: string) =>
  v.length > 0 && v.length <= 253 && v.split(".").every((p) => dnsLabel(p));

export function qualifiedName(key: string): boolean {
  const parts = key.split("/");
  if (parts.length > 2) return false;
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]];
  if (prefix !== undefined && !dnsSubdomain(prefix)) return false;
  return name !== undefined && name.length <= 63 && QUALIFIED.test(name);
}

export const labelValue = (v: string) => v === "" || (v.length <= 63 && QUALIFIED.test(v));

const SUFFIX: Record<string, number> = {
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** A resource.Quantity's value ("500m" → 0.5, "1Gi" → 1073741824); NaN when it is not one. */
export function quantity(v: unknown): number {
  if (typeof v === "number") return v;
  const m = /^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(v));
  if (!m) return Number.NaN;
  return Number(m[1]) * (m[2] ? (SUFFIX[m[2]] ?? Number.NaN) : 1);
}

const obj = (v: unknown): Obj => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(obj) : []);

/** Names that must be DNS-1035 labels (Services) or DNS-1123 labels (Namespaces); the rest subdomains. */
const LABEL_NAMED: Record<string, (v: string) => boolean> = {
  Service: (v) => v.length <= 63 && DNS_1035.test(v),
  Namespace: dnsLabel,
};

function checkMeta(m: Obj, at: string, out: string[]): void {
  for (const [k, v] of Object.entries(obj(m.labels))) {
    if (!qualifiedName(k))
      out.push(
        `${at}.labels: Invalid value: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.'`,
      );
    if (!labelValue(String(v)))
      out.push(
        `${at}.labels: Invalid value: "${String(v)}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63)`,
      );
  }
  for (const k of Object.keys(obj(m.annotations))) {
    if (!qualifiedName(k))
      out.push(
        `${at}.annotations: Invalid value: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.'`,
      );
  }
}

function checkContainers(pod: Obj, at: string, out: string[]): void {
  for (const field of ["containers", "initContainers"]) {
    list(pod[field]).forEach((c, i) => {
      const where = `${at}.${field}[${i}]`;
      if (!dnsLabel(String(c.name)))
        out.push(`${where}.name: Invalid value: "${String(c.name)}": must be a DNS-1123 label`);
      const res = obj(c.resources);
      const requests = obj(res.requests);
      const limits = obj(res.limits);
      for (const [r, v] of Object.entries(requests)) {
        if (limits[r] !== undefined && quantity(v) > quantity(limits[r])) {
          out.push(
            `${where}.resources.requests: Invalid value: "${String(v)}": must be less than or equal to ${r} limit of ${String(limits[r])}`,
          );
        }
      }
    });
  }
}

/** Every refusal the API server would give `o` (empty: it would be accepted), in its words. */
export function apiServerRefusals(o: Obj): string[] {
  const out: string[] = [];
  const m = obj(o.metadata);
  const name = String(m.name ?? "");
  const kind = String(o.kind);
  const nameOk = LABEL_NAMED[kind] ?? dnsSubdomain;
  if (!nameOk(name))
    out.push(
      `metadata.name: Invalid value: "${name}": must be a valid ${LABEL_NAMED[kind] ? "DNS label" : "DNS subdomain"}`,
    );
  checkMeta(m, "metadata", out);
  const spec = obj(o.spec);
  if (kind === "Pod") checkContainers(spec, "spec", out);
  const template = obj(spec.template);
  if (kind === "Deployment" || kind === "StatefulSet") {
    const tm = obj(template.metadata);
    checkMeta(tm, "spec.template.metadata", out);
    checkContainers(obj(template.spec), "spec.template.spec", out);
    const selector = obj(obj(spec.selector).matchLabels);
    const labels = obj(tm.labels);
    for (const [k, v] of Object.entries(selector)) {
      if (labels[k] !== v)
        out.push("spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`");
    }
    list(spec.volumeClaimTemplates).forEach((t, i) => {
      checkMeta(obj(t.metadata), `spec.volumeClaimTemplates[${i}].metadata`, out);
    });
  }
  if (kind === "Ingress") {
    list(spec.rules).forEach((r, i) => {
      const host = typeof r.host === "string" ? r.host.replace(/^\*\./, "") : undefined;
      if (host !== undefined && !dnsSubdomain(host))
        out.push(`spec.rules[${i}].host: Invalid value: "${String(r.host)}": a lowercase RFC 1123 subdomain`);
    });
  }
  return out;
}

/**
 * What a controller would fail on though the API server accepted it: a StatefulSet's pods carry
 * `controller-revision-hash: <name>-<10 characters>`, a label value, so the name fits 52.
 */
export function controllerRefusals(o: Obj): string[] {
  const name = String(obj(o.metadata).name ?? "");
  if (o.kind === "StatefulSet" && !labelValue(`${name}-0123456789`)) {
    return [
      `create Pod ${name}-0 in StatefulSet ${name} failed: metadata.labels: Invalid value: "${name}-0123456789": must be no more than 63 characters`,
    ];
  }
  return [];
}
