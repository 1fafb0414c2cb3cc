// `slipway deploy [DIR]`: find or create the deployment, send the new source, follow it to the end.
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import {
  type CreateDeploymentBody,
  type Deployment,
  type PatchDeploymentBody,
  unwrap,
} from "../../sdk/client.ts";
import { uploadDirectory } from "../../sdk/upload.ts";
import { type FlagSpec, parseAssignment, parseEnvFile, UsageError } from "../args.ts";
import { type Context, deploymentNamed } from "../context.ts";
import { watchRevision } from "./watch.ts";

export const deployFlags: FlagSpec = {
  booleans: ["no-wait"],
  values: ["name", "config", "image", "repo", "ref", "integration", "template", "secret", "env-file"],
};

type Secret = { name: string; value: string };

/** --env-file entries, then --secret ones (a later one wins for the same name). */
function secretsFromFlags(ctx: Context): Secret[] {
  const byName = new Map<string, string>();
  for (const file of ctx.args.values("env-file")) {
    if (!existsSync(file)) throw new UsageError(`--env-file ${file} does not exist.`);
    for (const s of parseEnvFile(readFileSync(file, "utf8"), file)) byName.set(s.name, s.value);
  }
  for (const s of ctx.args.values("secret")) {
    const { name, value } = parseAssignment(s, "--secret");
    byName.set(name, value);
  }
  return [...byName].map(([name, value]) => ({ name, value }));
}

/** The deployment's secrets (masked values keep what is stored) with `changes` laid over them. */
export function mergeSecrets(current: Secret[], changes: Secret[], remove: string[] = []): Secret[] {
  const byName = new Map(current.map((s) => [s.name, s.value]));
  for (const s of changes) byName.set(s.name, s.value);
  for (const n of remove) byName.delete(n);
  return [...byName].map(([name, value]) => ({ name, value }));
}

type Source = "internal_source" | "external_docker" | "codehost" | "internal_template";

function chooseSource(ctx: Context): Source {
  const given = (["image", "repo", "template"] as const).filter((f) => ctx.args.value(f) !== undefined);
  if (given.length > 1)
    throw new UsageError(
      `Give one of --image, --repo, --template, not ${given.map((g) => `--${g}`).join(" and ")}.`,
    );
  if (ctx.args.value("image")) return "external_docker";
  if (ctx.args.value("repo")) {
    if (!ctx.args.value("integration"))
      throw new UsageError("--repo needs --integration ID (see the code-host integrations).");
    return "codehost";
  }
  if (ctx.args.value("template")) return "internal_template";
  return "internal_source";
}

export async function deploy(ctx: Context): Promise<void> {
  const { args, out } = ctx;
  if (args.positionals.length > 1) throw new UsageError("deploy takes at most one directory.");
  const dir = resolve(args.positionals[0] ?? ".");
  const source = chooseSource(ctx);
  if (source === "internal_source" && (!existsSync(dir) || !statSync(dir).isDirectory())) {
    throw new UsageError(`${dir} is not a directory.`);
  }
  const name =
    args.value("name") ??
    basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-");
  const configPath = args.value("config") ?? "slipway.json";
  if (source === "internal_source" && !existsSync(join(dir, configPath))) {
    throw new UsageError(
      `${join(dir, configPath)} does not exist: add the app's config (see README) or pass --config PATH.`,
    );
  }
  const secrets = secretsFromFlags(ctx);
  const client = ctx.client();

  let dep = await deploymentNamed(client, name);
  let justCreated = false;
  const revisionConfig: PatchDeploymentBody["source_revision_config"] = {};
  if (source === "external_docker") revisionConfig.image_uri = args.value("image");
  if (source === "codehost") {
    revisionConfig.repo_ref = args.value("ref") ?? "main";
    revisionConfig.framework_config_path = configPath;
  }
  if (source === "internal_template") {
    revisionConfig.repo_ref = args.value("template");
    revisionConfig.framework_config_path = configPath;
  }

  if (!dep) {
    const body: CreateDeploymentBody = { name, source, secrets };
    if (source === "codehost") {
      body.source_config = { integration_id: args.value("integration"), repo_url: args.value("repo") };
    }
    // A source upload needs the deployment first (the upload URL is per deployment).
    if (source !== "internal_source") body.source_revision_config = revisionConfig;
    dep = await unwrap(client.api.POST("/v2/deployments", { body }));
    justCreated = true;
    out.line(`Created deployment ${name} (${dep.id}).`);
    out.event({ event: "created", deployment_id: dep.id, name });
  } else if (dep.source !== source) {
    throw new UsageError(
      `Deployment ${name} deploys from ${dep.source}, not ${source}: pick the matching option.`,
    );
  }

  let revisionId = dep.latest_revision_id;
  if (source === "internal_source") {
    out.spin(`Uploading ${dir}`);
    revisionConfig.source_tarball_path = await uploadDirectory(client, dep.id, dir);
    revisionConfig.framework_config_path = configPath;
    out.stopSpinner();
    out.line(`Uploaded ${dir}.`);
  }
  // A new image, repo or template deployment got its first revision from the POST.
  if (source === "internal_source" || !justCreated) {
    const patch: PatchDeploymentBody = { source_revision_config: revisionConfig };
    if (secrets.length || dep.secrets.length) patch.secrets = mergeSecrets(dep.secrets, secrets);
    const patched: Deployment = await unwrap(
      client.api.PATCH("/v2/deployments/{deployment_id}", {
        params: { path: { deployment_id: dep.id } },
        body: patch,
      }),
    );
    dep = patched;
    revisionId = patched.latest_revision_id;
  }
  if (!revisionId) throw new UsageError("The server made no revision for this deployment.");
  out.line(`Revision ${revisionId} queued.`);
  out.event({ event: "queued", deployment_id: dep.id, revision_id: revisionId });
  if (args.bool("no-wait")) return;
  await watchRevision(ctx, dep, revisionId);
}
