// `deploy()`: what `slipway deploy` does, for scripts: find or create the deployment by name, send
// the new source (an uploaded directory, an image, a template or a repository ref), wait for the
// revision to end while reporting its statuses and build log. Node only (it reads the directory).
import { existsSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import {
  type CreateDeploymentBody,
  type Deployment,
  type PatchDeploymentBody,
  type Revision,
  type Slipway,
  unwrap,
} from "./client.ts";
import { followRevision, type RevisionEvent } from "./follow.ts";
import { getRevision } from "./revisions.ts";
import { packDirectory, uploadRules, uploadTarball } from "./upload.ts";

/** A secret as the API takes it; a value of `********` keeps the stored one. */
export interface Secret {
  name: string;
  value: string;
}

/** A deployment from a code-host repository (`codehost`). */
export interface RepoSource {
  url: string;
  /** Branch, tag or commit; default `main`. */
  ref?: string;
  /** The code-host integration that reaches the repository. */
  integrationId: string;
}

export interface DeployOptions {
  /** The deployment's name; default: the directory's name, lowercased, other characters as `-`. */
  name?: string;
  /** Upload this directory (`internal_source`). Give exactly one of directory, image, template, repo. */
  directory?: string;
  /** Run this image (`external_docker`). */
  image?: string;
  /** Deploy this built-in template (`internal_template`, e.g. `hello-http`). */
  template?: string;
  /** Build this repository (`codehost`). */
  repo?: RepoSource;
  /** The app's config file, relative to the source; default `slipway.json`. */
  config?: string;
  /** Laid over the deployment's stored secrets (a later entry wins for the same name). */
  secrets?: Secret[];
  /** Wait for the revision to end (default true); false returns once it is queued. */
  wait?: boolean;
  /** Stream the build log as `log` events while waiting (default true). */
  logs?: boolean;
  /** Aborting stops the wait (the revision goes on) and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with each step as it happens. */
  onEvent?: (event: DeployEvent) => void;
}

/** What {@link deploy} reports as it goes (`status` and `log` come from {@link followRevision}). */
export type DeployEvent =
  | { type: "created"; deployment: Deployment }
  | { type: "packed"; directory: string; bytes: number; ignoreFile: string | null }
  | { type: "uploaded"; directory: string; sourceTarballPath: string }
  | { type: "queued"; deployment: Deployment; revisionId: string }
  | RevisionEvent;

export interface DeployResult {
  /** The deployment as read after the end (or when queued, without `wait`). */
  deployment: Deployment;
  /** The revision: terminal after a wait, as queued without one. */
  revision: Revision;
  /** Where the app answers (`source_config.custom_url`), null before its first deploy. */
  url: string | null;
  /** Whether the revision is DEPLOYED. A failed revision is a result, not a thrown error. */
  ok: boolean;
  /** Whether this call created the deployment. */
  created: boolean;
}

/** A deploy that cannot start as asked (no source, two sources, no config file, another source). */
export class DeployInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DeployInputError";
  }
}

type Source = Deployment["source"];

/** The deployment name a directory deploys as by default. */
export function defaultName(directory: string): string {
  return basename(resolve(directory))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-");
}

/** The stored secrets (masked values keep what is stored) with `changes` laid over them, `remove` left out. */
export function mergeSecrets(current: Secret[], changes: Secret[], remove: string[] = []): Secret[] {
  const byName = new Map(current.map((s) => [s.name, s.value]));
  for (const s of changes) byName.set(s.name, s.value);
  for (const n of remove) byName.delete(n);
  return [...byName].map(([name, value]) => ({ name, value }));
}

/** The deployment of that exact name in the client's workspace, or null. */
export async function findDeployment(client: Slipway, name: string): Promise<Deployment | null> {
  const page = await unwrap(client.api.GET("/v2/deployments", { params: { query: { name, limit: 1 } } }));
  return page.resources[0] ?? null;
}

function sourceOf(opts: DeployOptions): Source {
  const given = (["directory", "image", "template", "repo"] as const).filter((k) => opts[k] !== undefined);
  if (given.length > 1) throw new DeployInputError(`Give one source, not ${given.join(" and ")}.`);
  if (opts.image !== undefined) return "external_docker";
  if (opts.template !== undefined) return "internal_template";
  if (opts.repo !== undefined) {
    if (!opts.repo.integrationId)
      throw new DeployInputError("A repository needs the integration that reaches it (integrationId).");
    return "codehost";
  }
  if (opts.directory === undefined) throw new DeployInputError("Give a directory, image, template or repo.");
  return "internal_source";
}

/** Checks the directory and its config file before anything is sent. */
function checkDirectory(dir: string, config: string): void {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new DeployInputError(`${dir} is not a directory.`);
  if (!existsSync(join(dir, config)))
    throw new DeployInputError(
      `${join(dir, config)} does not exist: add the app's config (see Slipway's docs/local-runtime.md) or name another one.`,
    );
  const rules = uploadRules(dir);
  if (rules.ignores(config))
    throw new DeployInputError(
      `${config} is left out of the upload${rules.file ? ` by ${rules.file}` : ""}, but the build needs it.`,
    );
}

/**
 * Deploys: finds the deployment `name` in the client's workspace or creates it, sends the source
 * (uploads `directory` as a `.tar.gz`, or sets `image`, `template` or `repo`), merges `secrets`
 * over the stored ones, and PATCHes, which queues a new revision. Then, unless `wait` is false,
 * follows that revision to its end ({@link followRevision}), reporting each status and build-log
 * line through `onEvent`. Resolves with the final revision and the URL; a failed revision resolves
 * with `ok: false`. Throws {@link DeployInputError} for bad options, `SlipwayError` for refusals
 * (`UploadTooLargeError` for an archive over the server's limit).
 */
export async function deploy(client: Slipway, opts: DeployOptions): Promise<DeployResult> {
  const source = sourceOf(opts);
  const config = opts.config ?? "slipway.json";
  const dir = opts.directory === undefined ? undefined : resolve(opts.directory);
  const name = opts.name ?? (dir ? defaultName(dir) : undefined);
  if (!name) throw new DeployInputError("Give the deployment's name.");
  if (dir) checkDirectory(dir, config);
  const emit = (e: DeployEvent) => opts.onEvent?.(e);
  const secrets = opts.secrets ?? [];

  const revisionConfig: NonNullable<PatchDeploymentBody["source_revision_config"]> = {};
  if (opts.image !== undefined) revisionConfig.image_uri = opts.image;
  if (opts.repo) revisionConfig.repo_ref = opts.repo.ref ?? "main";
  if (opts.template !== undefined) revisionConfig.repo_ref = opts.template;
  if (source !== "external_docker") revisionConfig.framework_config_path = config;

  let dep = await findDeployment(client, name);
  const created = dep === null;
  if (!dep) {
    const body: CreateDeploymentBody = { name, source, secrets };
    if (opts.repo) body.source_config = { integration_id: opts.repo.integrationId, repo_url: opts.repo.url };
    // A source upload needs the deployment first (the upload URL is per deployment).
    if (source !== "internal_source") body.source_revision_config = revisionConfig;
    dep = await unwrap(client.api.POST("/v2/deployments", { body }));
    emit({ type: "created", deployment: dep });
  } else if (dep.source !== source) {
    throw new DeployInputError(`Deployment ${name} deploys from ${dep.source}, not ${source}.`);
  }

  let revisionId = dep.latest_revision_id;
  if (dir) {
    const tarball = await packDirectory(dir);
    emit({ type: "packed", directory: dir, bytes: tarball.byteLength, ignoreFile: uploadRules(dir).file });
    const path = await uploadTarball(client, dep.id, new Uint8Array(tarball), `The archive of ${dir}`);
    revisionConfig.source_tarball_path = path;
    emit({ type: "uploaded", directory: dir, sourceTarballPath: path });
  }
  // A new image, repo or template deployment got its first revision from the POST.
  if (source === "internal_source" || !created) {
    const patch: PatchDeploymentBody = { source_revision_config: revisionConfig };
    if (secrets.length || dep.secrets.length) patch.secrets = mergeSecrets(dep.secrets, secrets);
    dep = await unwrap(
      client.api.PATCH("/v2/deployments/{deployment_id}", {
        params: { path: { deployment_id: dep.id } },
        body: patch,
      }),
    );
    revisionId = dep.latest_revision_id;
  }
  if (!revisionId) throw new Error(`The server made no revision for deployment ${name}.`);
  emit({ type: "queued", deployment: dep, revisionId });

  if (opts.wait === false) {
    const revision = await getRevision(client, dep.id, revisionId);
    const url = dep.source_config.custom_url ?? null;
    return { deployment: dep, revision, url, ok: revision.status === "DEPLOYED", created };
  }
  const outcome = await followRevision(client, dep.id, revisionId, {
    logs: opts.logs,
    signal: opts.signal,
    onEvent: emit,
  });
  return { ...outcome, created };
}
