import type { ValidationItem } from "../../http/errors.ts";
import type { Secret, SecretReference, Source } from "./schema.ts";
import { MASK } from "./schema.ts";

/**
 * Field rules of DESIGN §3 as data and pure checks. Each check returns 422 items whose `loc` names
 * the field, so one response lists every problem of a request.
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

interface FieldPolicy<F extends string> {
  required: readonly F[];
  allowed: readonly F[];
}

const BUILD_COMMANDS = ["install_command", "build_command"] as const;

const DEPLOYMENT_POLICY: Record<Source, FieldPolicy<InPlaceField>> = {
  codehost: {
    required: ["integration_id", "repo_url"],
    allowed: ["integration_id", "repo_url", "build_on_push", ...BUILD_COMMANDS],
  },
  internal_source: { required: [], allowed: [...BUILD_COMMANDS] },
  internal_template: { required: [], allowed: [...BUILD_COMMANDS] },
  internal_docker: { required: [], allowed: [] },
  external_docker: { required: [], allowed: ["custom_url", "listener_id", "listener_config"] },
};

const REVISION_POLICY: Record<Source, FieldPolicy<RevisionField>> = {
  codehost: {
    required: ["repo_ref", "framework_config_path"],
    allowed: ["repo_ref", "framework_config_path"],
  },
  internal_source: {
    required: ["source_tarball_path", "framework_config_path"],
    allowed: ["source_tarball_path", "framework_config_path"],
  },
  internal_template: { required: ["repo_ref"], allowed: ["repo_ref", "framework_config_path"] },
  internal_docker: { required: ["image_uri"], allowed: ["image_uri", "framework_config_path"] },
  external_docker: { required: ["image_uri"], allowed: ["image_uri", "framework_config_path"] },
};

/**
 * The fields without which a source cannot make a revision; a create without all of them makes
 * none. The hosted service's CLI creates an internal_source deployment with
 * `source_revision_config: {}` and sends the tarball and framework_config_path in a PATCH after the
 * upload.
 */
export const ARTIFACT_FIELDS: Partial<Record<Source, readonly RevisionField[]>> = {
  internal_source: ["source_tarball_path", "framework_config_path"],
  internal_docker: ["image_uri"],
};

/** Whether these values let a revision of `source` be made (every artifact field known). */
export const hasArtifacts = (source: Source, values: RevisionValues): boolean =>
  (ARTIFACT_FIELDS[source] ?? []).every((f) => values[f] !== null);

const SC = ["body", "source_config"];
const SRC = ["body", "source_revision_config"];

const missing = (loc: (string | number)[], source: string): ValidationItem => ({
  loc,
  msg: `Field required for source ${source}.`,
  type: "missing",
});
const forbidden = (loc: (string | number)[], source: string): ValidationItem => ({
  loc,
  msg: `Not used by source ${source}; leave it out.`,
  type: "forbidden",
});
const item = (loc: (string | number)[], msg: string): ValidationItem => ({ loc, msg, type: "value_error" });

export const isSet = (v: unknown): boolean => v !== undefined && v !== null;

const NAME = /^[a-z][a-z0-9-]{0,62}$/;

export function checkName(name: string): ValidationItem[] {
  if (NAME.test(name)) return [];
  return [
    item(["body", "name"], "Must be 1 to 63 lowercase letters, digits or '-', starting with a letter."),
  ];
}

/**
 * Deployment-level SourceConfig fields that were sent: forbidden ones, and (at create) required
 * ones. `custom_url` is the server's for every source but external_docker.
 */
export function checkSourceConfig(
  source: Source,
  sent: Partial<Record<InPlaceField, unknown>>,
  opts: { create: boolean; currentCustomUrl?: unknown; currentListenerId?: unknown },
): ValidationItem[] {
  const policy = DEPLOYMENT_POLICY[source];
  const items: ValidationItem[] = [];
  for (const field of IN_PLACE_FIELDS) {
    const value = sent[field];
    if (!isSet(value)) {
      if (opts.create && policy.required.includes(field)) items.push(missing([...SC, field], source));
      continue;
    }
    if (policy.allowed.includes(field)) continue;
    if (field === "custom_url") {
      // A client that sends back the record it read is not changing anything.
      if (!opts.create && value === opts.currentCustomUrl) continue;
      items.push(item([...SC, field], `Set by the server for source ${source}; leave it out.`));
      continue;
    }
    items.push(forbidden([...SC, field], source));
  }
  if (
    isSet(sent.custom_url) &&
    policy.allowed.includes("custom_url") &&
    !isHttpUrl(String(sent.custom_url))
  ) {
    items.push(item([...SC, "custom_url"], "Must be an absolute http or https URL."));
  }
  const listenerId = isSet(sent.listener_id) ? sent.listener_id : opts.currentListenerId;
  if (isSet(sent.listener_config) && policy.allowed.includes("listener_config") && !isSet(listenerId)) {
    items.push(item([...SC, "listener_config"], "Needs listener_id."));
  }
  return items;
}

function isHttpUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** git check-ref-format, for what a client can name: a branch, `refs/heads/…` or `refs/tags/…`. */
export function isValidRef(ref: string): boolean {
  if (ref.startsWith("refs/") && !/^refs\/(heads|tags)\/./.test(ref)) return false;
  if (ref.startsWith("-") || ref.startsWith("/") || ref.endsWith("/") || ref.endsWith(".")) return false;
  if (ref.endsWith(".lock") || ref.includes("..") || ref.includes("@{") || ref.includes("//")) return false;
  if (ref === "@") return false;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what git refuses.
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(ref)) return false;
  return ref.split("/").every((part) => part !== "" && !part.startsWith("."));
}

export const isTagRef = (ref: string | null | undefined): boolean =>
  typeof ref === "string" && ref.startsWith("refs/tags/");

/** A path inside the source tree: relative, no `..`, no NUL. */
function isRelativePath(p: string): boolean {
  if (p.startsWith("/") || p.includes("\0") || p.includes("\\")) return false;
  return p.split("/").every((part) => part !== "..");
}

/**
 * SourceRevisionConfig of a revision about to be made (or, without its artifact, of a create that
 * makes none): required and forbidden fields for the revision's source, and their formats.
 */
export function checkRevisionConfig(
  source: Source,
  values: RevisionValues,
  opts: { withArtifact: boolean },
): ValidationItem[] {
  const policy = REVISION_POLICY[source];
  const artifacts = ARTIFACT_FIELDS[source] ?? [];
  const items: ValidationItem[] = [];
  for (const field of REVISION_FIELDS) {
    const value = values[field];
    if (value === null) {
      const needed = policy.required.includes(field) && (opts.withArtifact || !artifacts.includes(field));
      if (needed) items.push(missing([...SRC, field], source));
      continue;
    }
    if (!policy.allowed.includes(field)) {
      items.push(forbidden([...SRC, field], source));
      continue;
    }
    if (field === "repo_ref" && source === "codehost" && !isValidRef(value)) {
      items.push(item([...SRC, field], "Must be a branch name or refs/tags/<tag>."));
    }
    if (field === "framework_config_path" && !isRelativePath(value)) {
      items.push(item([...SRC, field], "Must be a relative path inside the source, without '..'."));
    }
    if (field === "image_uri" && /\s/.test(value)) {
      items.push(item([...SRC, field], "Must be an image reference without spaces."));
    }
  }
  return items;
}

/** A previous revision's values that a revision of `source` may keep (the others are dropped). */
export function keepAllowed(source: Source, values: RevisionValues): RevisionValues {
  const allowed = REVISION_POLICY[source].allowed;
  const out = { ...values };
  for (const f of REVISION_FIELDS) if (!allowed.includes(f)) out[f] = null;
  return out;
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
export function checkSecrets(secrets: Secret[], opts: { knownNames: ReadonlySet<string> }): ValidationItem[] {
  const items: ValidationItem[] = [];
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
): ValidationItem[] {
  const items: ValidationItem[] = [];
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

/** Cross-field rules of a (merged) resource spec. */
export function checkResourceSpec(spec: Record<string, unknown> | null): ValidationItem[] {
  if (spec === null) return [];
  const items: ValidationItem[] = [];
  for (const [min, max] of SCALE_PAIRS) {
    const lo = spec[min];
    const hi = spec[max];
    if (typeof lo === "number" && typeof hi === "number" && lo > hi) {
      items.push(item(["body", "source_config", "resource_spec", min], `Must not exceed ${max} (${hi}).`));
    }
  }
  return items;
}
