import type { FieldProblem } from "../errors.ts";
import type { Secret, SecretReference } from "../model.ts";
import { MASK } from "../model.ts";
import { checkListenerSpec, type ListenerSpecContext } from "../spec/kubernetes-names.ts";

/**
 * The deployment field rules as data and pure checks. Each check returns 422 items whose `loc` names
 * the field, so one response lists every problem of a request. What depends on the source lives in
 * source-rules.ts.
 */

/** The in-place SourceConfig fields kept on the deployment row (resource_spec is per revision). */
export const IN_PLACE_FIELDS = [
  "integration_id",
  "repo_url",
  "build_on_push",
  "custom_url",
  "listener_id",
  "listener_config",
  "install_command",
  "build_command",
] as const;
export type InPlaceField = (typeof IN_PLACE_FIELDS)[number];
export type StoredSourceConfig = Record<InPlaceField, unknown>;

export const IMMUTABLE_FIELDS: readonly InPlaceField[] = [
  "integration_id",
  "repo_url",
  "listener_id",
  "listener_config",
];

export const REVISION_FIELDS = [
  "repo_ref",
  "framework_config_path",
  "image_uri",
  "source_tarball_path",
] as const;
export type RevisionField = (typeof REVISION_FIELDS)[number];
export type RevisionValues = Record<RevisionField, string | null>;

/** A stored or sent source_revision_config as the four revision values, null where unset or not text. */
export function revisionValuesOf(stored: Record<string, unknown> | null | undefined): RevisionValues {
  const out = {} as RevisionValues;
  for (const f of REVISION_FIELDS) {
    const v = stored?.[f];
    out[f] = typeof v === "string" ? v : null;
  }
  return out;
}

export const SC = ["body", "source_config"];
export const SRC = ["body", "source_revision_config"];

export const missing = (loc: (string | number)[], source: string): FieldProblem => ({
  loc,
  msg: `Field required for source ${source}.`,
  type: "missing",
});
export const forbidden = (loc: (string | number)[], source: string): FieldProblem => ({
  loc,
  msg: `Not used by source ${source}; leave it out.`,
  type: "forbidden",
});
export const item = (loc: (string | number)[], msg: string): FieldProblem => ({
  loc,
  msg,
  type: "value_error",
});

export const isSet = (v: unknown): boolean => v !== undefined && v !== null;

const NAME = /^[a-z][a-z0-9-]{0,62}$/;

export function checkName(name: string): FieldProblem[] {
  if (NAME.test(name)) return [];
  return [
    item(["body", "name"], "Must be 1 to 63 lowercase letters, digits or '-', starting with a letter."),
  ];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED = new Set(["PORT", "DATABASE_URI", "POSTGRES_URI", "REDIS_URI"]);

function envNameProblem(name: string): string | undefined {
  if (!ENV_NAME.test(name))
    return "Must be a C identifier: letters, digits and '_', not starting with a digit.";
  if (RESERVED.has(name) || name.startsWith("SLIPWAY_")) return `${name} is reserved by Slipway.`;
  return undefined;
}

/** Secret names, and masks: the mask stands for a stored value, so only names in `knownNames` may use it. */
export function checkSecrets(secrets: Secret[], opts: { knownNames: ReadonlySet<string> }): FieldProblem[] {
  const items: FieldProblem[] = [];
  const seen = new Set<string>();
  secrets.forEach((s, i) => {
    const problem = envNameProblem(s.name);
    if (problem) items.push(item(["body", "secrets", i, "name"], problem));
    else if (seen.has(s.name))
      items.push(item(["body", "secrets", i, "name"], `Duplicate secret ${s.name}.`));
    seen.add(s.name);
    if (s.value === MASK && !opts.knownNames.has(s.name)) {
      items.push(
        item(
          ["body", "secrets", i, "value"],
          `"${MASK}" keeps a stored value, and ${s.name} has none: send the value.`,
        ),
      );
    }
  });
  return items;
}

const K8S_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const K8S_KEY = /^[-._a-zA-Z0-9]+$/;

export function checkSecretReferences(
  refs: SecretReference[],
  secretNames: ReadonlySet<string>,
): FieldProblem[] {
  const items: FieldProblem[] = [];
  const seen = new Set<string>();
  refs.forEach((r, i) => {
    const loc = ["body", "secret_references", i];
    const problem = envNameProblem(r.name);
    if (problem) items.push(item([...loc, "name"], problem));
    else if (seen.has(r.name) || secretNames.has(r.name)) {
      items.push(item([...loc, "name"], `${r.name} is already defined by another secret or reference.`));
    }
    seen.add(r.name);
    if (!K8S_NAME.test(r.secret_name)) {
      items.push(
        item([...loc, "secret_name"], "Must be a Kubernetes secret name (lowercase DNS subdomain)."),
      );
    }
    // Resolved as a file name on a local runtime: "." and ".." would leave the secret's directory.
    if (!K8S_KEY.test(r.secret_key) || r.secret_key === "." || r.secret_key === "..") {
      items.push(
        item([...loc, "secret_key"], "Must be letters, digits, '-', '_' or '.', and not '.' or '..'."),
      );
    }
  });
  return items;
}

const SCALE_PAIRS: [string, string][] = [
  ["min_scale", "max_scale"],
  ["queue_min_scale", "queue_max_scale"],
  ["orchestrator_min_scale", "orchestrator_max_scale"],
];

/**
 * Cross-field rules of a (merged) resource spec; with `listener`, also what the cluster would
 * refuse (spec/kubernetes-names.ts), so local deployments accept what they always have.
 */
export function checkResourceSpec(
  spec: Record<string, unknown> | null,
  listener?: ListenerSpecContext,
): FieldProblem[] {
  if (listener) {
    // The name is checked even without a spec.
    const items = checkListenerSpec(spec ?? {}, listener);
    return spec === null ? items : [...items, ...checkResourceSpec(spec)];
  }
  if (spec === null) return [];
  const items: FieldProblem[] = [];
  for (const [min, max] of SCALE_PAIRS) {
    const lo = spec[min];
    const hi = spec[max];
    if (typeof lo === "number" && typeof hi === "number" && lo > hi) {
      items.push(item(["body", "source_config", "resource_spec", min], `Must not exceed ${max} (${hi}).`));
    }
  }
  return items;
}
