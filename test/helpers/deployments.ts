import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import type { TestContext } from "./harness.ts";
import { waitForRevision } from "./wait.ts";

/**
 * The interface's records (spec/interface.md), written out by hand from its tables rather than
 * taken from the server's own schemas, so that a response the server believes correct is checked
 * against the contract itself: every required key present (nullable ones too), exact types.
 */
const nullable = (schema: object) => ({ anyOf: [schema, { type: "null" }] });
const str = { type: "string" };
const uuid = { type: "string", format: "uuid" };
const dateTime = { type: "string", format: "date-time" };

const resourceSpec = { type: "object" };
const sourceConfig = {
  type: "object",
  required: [
    "integration_id",
    "repo_url",
    "build_on_push",
    "custom_url",
    "resource_spec",
    "listener_id",
    "listener_config",
    "install_command",
    "build_command",
  ],
  additionalProperties: false,
  properties: {
    integration_id: nullable(uuid),
    repo_url: nullable(str),
    build_on_push: nullable({ type: "boolean" }),
    custom_url: nullable(str),
    resource_spec: nullable(resourceSpec),
    listener_id: nullable(uuid),
    listener_config: nullable({
      type: "object",
      additionalProperties: false,
      properties: { k8s_namespace: nullable(str) },
    }),
    install_command: nullable(str),
    build_command: nullable(str),
  },
};
const sourceRevisionConfig = {
  type: "object",
  required: ["repo_ref", "framework_config_path", "image_uri", "source_tarball_path", "repo_commit_sha"],
  additionalProperties: false,
  properties: {
    repo_ref: nullable(str),
    framework_config_path: nullable(str),
    image_uri: nullable(str),
    source_tarball_path: nullable(str),
    repo_commit_sha: nullable(str),
  },
};
const secret = {
  type: "object",
  required: ["name", "value"],
  additionalProperties: false,
  properties: { name: str, value: str },
};
const secretReference = {
  type: "object",
  required: ["name", "secret_name", "secret_key"],
  additionalProperties: false,
  properties: { name: str, secret_name: str, secret_key: str },
};

const REVISION_STATUSES = [
  "CREATING",
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
  "DEPLOYED",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "SKIPPED",
  "INTERRUPTED",
  "UNKNOWN",
];

export const deploymentSchema = {
  type: "object",
  required: [
    "name",
    "source",
    "source_config",
    "source_revision_config",
    "secrets",
    "id",
    "tenant_id",
    "created_at",
    "updated_at",
    "status",
    "latest_revision_id",
    "latest_revision_status",
    "active_revision_id",
    "deployment_type",
  ],
  additionalProperties: false,
  properties: {
    name: str,
    source: {
      enum: ["codehost", "external_docker", "internal_docker", "internal_source", "internal_template"],
    },
    source_config: sourceConfig,
    source_revision_config: sourceRevisionConfig,
    secrets: { type: "array", items: secret },
    id: uuid,
    tenant_id: uuid,
    created_at: dateTime,
    updated_at: dateTime,
    status: { enum: ["AWAITING_DATABASE", "READY", "UNUSED", "AWAITING_DELETE", "UNKNOWN"] },
    latest_revision_id: nullable(uuid),
    latest_revision_status: nullable({ enum: REVISION_STATUSES }),
    active_revision_id: nullable(uuid),
    secret_references: nullable({ type: "array", items: secretReference }),
    image_version: nullable(str),
    deployment_type: { enum: ["dev_free", "dev", "prod"] },
  },
};

export const deploymentListSchema = {
  type: "object",
  required: ["resources", "offset"],
  additionalProperties: false,
  properties: { resources: { type: "array", items: deploymentSchema }, offset: { type: "integer" } },
};

export const revisionSchema = {
  type: "object",
  required: [
    "id",
    "created_at",
    "updated_at",
    "status",
    "source",
    "source_revision_config",
    "deployment_id",
    "status_history",
    "status_message",
    "number",
  ],
  additionalProperties: false,
  properties: {
    id: uuid,
    created_at: dateTime,
    updated_at: dateTime,
    status: { enum: REVISION_STATUSES },
    source: deploymentSchema.properties.source,
    source_revision_config: sourceRevisionConfig,
    deployment_id: uuid,
    status_history: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        required: ["status", "at"],
        additionalProperties: false,
        properties: { status: { enum: REVISION_STATUSES }, at: dateTime, message: str },
      },
    },
    status_message: nullable(str),
    number: { type: "integer", minimum: 1 },
  },
};

export const revisionListSchema = {
  type: "object",
  required: ["resources", "offset"],
  additionalProperties: false,
  properties: { resources: { type: "array", items: revisionSchema }, offset: { type: "integer" } },
};

const ajv = new Ajv.default({ allErrors: true, strict: true });
addFormats.default(ajv);
const validators = new Map<object, ReturnType<typeof ajv.compile>>();

/** Fails with Ajv's errors when `value` does not satisfy `schema`. */
export function assertMatches(schema: object, value: unknown): void {
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(schema, validate);
  }
  assert.ok(
    validate(value),
    `schema mismatch: ${JSON.stringify(validate.errors)} in ${JSON.stringify(value)}`,
  );
}

export interface Res<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Record<string, unknown>;
}

/** One JSON request; `key` defaults to the member key. */
export async function call<T = Record<string, unknown>>(
  ctx: TestContext,
  method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT",
  url: string,
  payload?: unknown,
  opts: { key?: string; headers?: Record<string, string> } = {},
): Promise<Res<T>> {
  const headers: Record<string, string> = { "x-api-key": opts.key ?? ctx.keys.member, ...opts.headers };
  if (payload !== undefined) headers["content-type"] = "application/json";
  const res = await ctx.app.inject({
    method,
    url,
    headers,
    payload: payload === undefined ? undefined : JSON.stringify(payload),
  });
  return {
    status: res.statusCode,
    body: (res.body === "" ? {} : res.json()) as T,
    headers: res.headers as Record<string, unknown>,
  };
}

export type Deployment = {
  id: string;
  name: string;
  source: string;
  status: string;
  tenant_id: string;
  latest_revision_id: string | null;
  latest_revision_status: string | null;
  active_revision_id: string | null;
  source_config: Record<string, unknown>;
  source_revision_config: Record<string, string | null>;
  secrets: { name: string; value: string }[];
  secret_references: { name: string; secret_name: string; secret_key: string }[] | null;
  image_version: string | null;
  deployment_type: string;
  created_at: string;
  updated_at: string;
};

export type Revision = {
  id: string;
  status: string;
  source: string;
  deployment_id: string;
  source_revision_config: Record<string, string | null>;
  status_history: { status: string; at: string; message?: string }[];
  status_message: string | null;
  number: number;
};

export interface ValidationBody {
  detail: { loc: (string | number)[]; msg: string; type: string }[];
}

/** The 422 items' locations, joined with dots. */
export function locs(res: Res<unknown>): string[] {
  assert.equal(res.status, 422, `expected 422, got ${res.status}: ${JSON.stringify(res.body)}`);
  return (res.body as ValidationBody).detail.map((d) => d.loc.join("."));
}

let counter = 0;
export const uniqueName = (prefix = "app") =>
  `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

/** A docker deployment (the one source that needs nothing else), made through the API. */
export async function createDocker(
  ctx: TestContext,
  body: Record<string, unknown> = {},
  opts: { key?: string; headers?: Record<string, string> } = {},
): Promise<Deployment> {
  const res = await call<Deployment>(
    ctx,
    "POST",
    "/v2/deployments",
    {
      name: uniqueName(),
      source: "external_docker",
      source_revision_config: { image_uri: "registry.example/app:1" },
      ...body,
    },
    opts,
  );
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assertMatches(deploymentSchema, res.body);
  return res.body;
}

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "Slipway Test",
  GIT_AUTHOR_EMAIL: "test@slipway.invalid",
  GIT_COMMITTER_NAME: "Slipway Test",
  GIT_COMMITTER_EMAIL: "test@slipway.invalid",
};

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, { cwd, env: GIT_ENV, encoding: "utf8" }).trim();

/** A directory for SLIPWAY_LOCAL_GIT_ROOTS with `<root>/team/web`: branch main (two commits), tag v1. */
export function makeGitRoot(): { root: string; team: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "slipway-h1-git-")));
  const team = join(root, "team");
  const repo = join(team, "web");
  mkdirSync(repo, { recursive: true });
  git(repo, "init", "-q", "-b", "main");
  writeFileSync(join(repo, "slipway.json"), "{}\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "first");
  git(repo, "tag", "v1");
  writeFileSync(join(repo, "README.md"), "# web\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "second");
  return { root, team };
}

export interface Codehost {
  integrationId: string;
  repoUrl: string;
}

/** A real local_git integration of the context's organization, through the integrations API. */
export async function createIntegration(ctx: TestContext, team: string): Promise<Codehost> {
  const created = await call<{ id: string }>(
    ctx,
    "POST",
    "/v1/integrations/forge/codehost",
    { kind: "local_git", path: team },
    { key: ctx.keys.admin },
  );
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const repos = await call<{ url: string; name: string }[]>(
    ctx,
    "GET",
    `/v1/integrations/forge/codehost/${created.body.id}/repos`,
  );
  assert.equal(repos.status, 200, JSON.stringify(repos.body));
  const web = repos.body.find((r) => r.name === "web");
  assert.ok(web, "the web repository is listed");
  return { integrationId: created.body.id, repoUrl: web.url };
}

/** Creates `name` from the hello-http template and waits until it is DEPLOYED; resolves to its host. */
export async function deployHello(ctx: TestContext, name: string): Promise<string> {
  const created = await call<Deployment>(ctx, "POST", "/v2/deployments", {
    name,
    source: "internal_template",
    source_revision_config: { repo_ref: "hello-http" },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.ok(created.body.latest_revision_id);
  assert.equal(
    await waitForRevision(ctx.db, created.body.latest_revision_id, { timeoutMs: 120_000 }),
    "DEPLOYED",
  );
  return `${created.body.name}.${ctx.config.apps.domain}`;
}
