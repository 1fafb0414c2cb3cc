import type { CodehostConfig } from "../../codehost/drivers.ts";
import { IntegrationNotFound, RefNotFound, RepoNotFound } from "../../codehost/errors.ts";
import { isTagRef, isValidRef } from "../../codehost/interface.ts";
import { verifyCodehostSource } from "../../codehost/verify.ts";
import {
  checkSecretReferences,
  forbidden,
  IN_PLACE_FIELDS,
  type InPlaceField,
  isSet,
  item,
  missing,
  REVISION_FIELDS,
  type RevisionField,
  type RevisionValues,
  SC,
  SRC,
} from "../../core/deployments/rules.ts";
import { type FieldProblem, invalid } from "../../core/errors.ts";
import type { SecretReference, Source } from "../../core/model.ts";
import type { Executor } from "../../db/client.ts";
import { findTemplate } from "../../templates/catalog.ts";

/**
 * The rules that depend on a deployment's or revision's source, for create and patch alike: which
 * fields each source requires and allows, which make a revision, and the cross-field rules
 * (templates, tags, secret references, the code host). Each returns 422 items naming the field.
 */

interface FieldPolicy<F extends string> {
  required: readonly F[];
  allowed: readonly F[];
}

const BUILD_COMMANDS = ["install_command", "build_command"] as const;
const LISTENER_FIELDS = ["listener_id", "listener_config"] as const;

const DEPLOYMENT_POLICY: Record<Source, FieldPolicy<InPlaceField>> = {
  codehost: {
    required: ["integration_id", "repo_url"],
    allowed: ["integration_id", "repo_url", "build_on_push", ...BUILD_COMMANDS],
  },
  internal_source: { required: [], allowed: [...BUILD_COMMANDS] },
  internal_template: { required: [], allowed: [...BUILD_COMMANDS] },
  internal_docker: { required: [], allowed: [...LISTENER_FIELDS] },
  external_docker: { required: [], allowed: ["custom_url", ...LISTENER_FIELDS] },
};

/** Sources a listener runs only as an image this server builds and pushes to SLIPWAY_REGISTRY_URL. */
const BUILT_FOR_LISTENER: ReadonlySet<Source> = new Set(["codehost", "internal_source", "internal_template"]);

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

/**
 * Deployment-level SourceConfig fields that were sent: forbidden ones, and (at create) required
 * ones. `custom_url` is the server's for every source but external_docker.
 */
export function checkSourceConfig(
  source: Source,
  sent: Partial<Record<InPlaceField, unknown>>,
  opts: { create: boolean; currentCustomUrl?: unknown; currentListenerId?: unknown; registry?: boolean },
): FieldProblem[] {
  const policy = DEPLOYMENT_POLICY[source];
  const items: FieldProblem[] = [];
  for (const field of IN_PLACE_FIELDS) {
    const value = sent[field];
    if (!isSet(value)) {
      if (opts.create && policy.required.includes(field)) items.push(missing([...SC, field], source));
      continue;
    }
    if (policy.allowed.includes(field)) continue;
    if (field === "listener_id" && BUILT_FOR_LISTENER.has(source)) {
      if (!opts.registry) items.push(item([...SC, field], needsRegistry(source)));
      continue;
    }
    if (field === "listener_config" && BUILT_FOR_LISTENER.has(source)) continue;
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
  const takesListener = policy.allowed.includes("listener_config") || BUILT_FOR_LISTENER.has(source);
  if (isSet(sent.listener_config) && takesListener && !isSet(listenerId)) {
    items.push(item([...SC, "listener_config"], "Needs listener_id."));
  }
  const listenerRefused = items.some((i) => i.loc.join(".") === [...SC, "listener_id"].join("."));
  if (
    opts.create &&
    isSet(sent.listener_id) &&
    !listenerRefused &&
    namespaceOf(sent.listener_config) === null
  ) {
    items.push(
      item(
        [...SC, "listener_config", "k8s_namespace"],
        "Required with listener_id: the namespace to run in.",
      ),
    );
  }
  return items;
}

/** Why a source that must be built cannot be run by a listener here. */
export const needsRegistry = (source: Source) =>
  `A listener runs source ${source} only as an image this server builds and pushes to its registry, ` +
  "and none is configured (SLIPWAY_REGISTRY_URL).";

/** Whether a revision of `source` run by a listener is built into an image here first. */
export const builtForListener = (source: Source) => BUILT_FOR_LISTENER.has(source);

/** `listener_config.k8s_namespace` of a sent or stored source_config. */
export function namespaceOf(listenerConfig: unknown): string | null {
  if (!listenerConfig || typeof listenerConfig !== "object") return null;
  const ns = (listenerConfig as { k8s_namespace?: unknown }).k8s_namespace;
  return typeof ns === "string" && ns !== "" ? ns : null;
}

function isHttpUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

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
): FieldProblem[] {
  const policy = REVISION_POLICY[source];
  const artifacts = ARTIFACT_FIELDS[source] ?? [];
  const items: FieldProblem[] = [];
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
    if (field === "repo_ref" && source === "internal_template" && !findTemplate(value)) {
      items.push(item([...SRC, field], `No built-in template ${value}: GET /v2/templates lists them.`));
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

/**
 * build_on_push follows a branch, and a tag does not move. The item stands at build_on_push when
 * the request sent it, else at the repo_ref that made the pair wrong.
 */
export function checkBuildOnPush(
  source: Source,
  buildOnPush: unknown,
  ref: string | null | undefined,
  opts: { sentBuildOnPush: boolean },
): FieldProblem[] {
  if (source !== "codehost" || buildOnPush !== true || !isTagRef(ref)) return [];
  const loc = opts.sentBuildOnPush ? [...SC, "build_on_push"] : [...SRC, "repo_ref"];
  return [item(loc, "build_on_push cannot be true for a tag ref: a tag does not move.")];
}

/** Only external_docker takes secret_references; theirs must not clash with the secrets' names. */
export function checkSecretReferencesFor(
  source: Source,
  refs: SecretReference[] | null,
  secretNames: ReadonlySet<string>,
): FieldProblem[] {
  if (refs === null) return [];
  if (source === "external_docker") return checkSecretReferences(refs, secretNames);
  return [
    {
      loc: ["body", "secret_references"],
      msg: "Only source external_docker takes secret_references.",
      type: "forbidden",
    },
  ];
}

/**
 * A codehost source checked with its host, as a request names it: each thing the host does not
 * have is a 422 at the field that named it; a host that cannot answer stays HostUnavailable (502).
 */
export async function verifyCodehost(
  exec: Executor,
  config: CodehostConfig,
  organizationId: string,
  input: { integrationId: string; repoUrl: string; repoRef: string },
): Promise<void> {
  try {
    await verifyCodehostSource(exec, config, organizationId, input);
  } catch (err) {
    if (err instanceof IntegrationNotFound) throw invalid([...SC, "integration_id"], err.message);
    if (err instanceof RepoNotFound) throw invalid([...SC, "repo_url"], err.message);
    if (err instanceof RefNotFound) throw invalid([...SRC, "repo_ref"], err.message);
    throw err;
  }
}
