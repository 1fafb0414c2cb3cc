// `slipway deploy [DIR]`: the SDK's deploy() (find or create, send the source, wait), printed.
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type DeployOptions, deploy as deployWithSdk, type Secret } from "../../sdk/deploy.ts";
import { formatBytes } from "../../sdk/upload.ts";
import { type FlagSpec, parseAssignment, parseEnvFile, UsageError } from "../args.ts";
import { atMost, type Context } from "../context.ts";
import { interruptible, Progress, report } from "./watch.ts";

export const deployFlags: FlagSpec = {
  booleans: ["no-wait"],
  values: ["name", "config", "image", "repo", "ref", "integration", "template", "secret", "env-file"],
};

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

/** The source the flags name, as deploy() takes it. */
function sourceFromFlags(ctx: Context): Pick<DeployOptions, "directory" | "image" | "template" | "repo"> {
  const { args } = ctx;
  const given = (["image", "repo", "template"] as const).filter((f) => args.value(f) !== undefined);
  if (given.length > 1)
    throw new UsageError(
      `Give one of --image, --repo, --template, not ${given.map((g) => `--${g}`).join(" and ")}.`,
    );
  const image = args.value("image");
  const repo = args.value("repo");
  const template = args.value("template");
  if (given.length && args.positionals.length)
    throw new UsageError(`A directory and --${given[0]} are two sources: give one.`, true);
  if (image !== undefined) return { image };
  if (template !== undefined) return { template };
  if (repo !== undefined) {
    const integrationId = args.value("integration");
    if (!integrationId)
      throw new UsageError("--repo needs --integration ID (see the code-host integrations).");
    return { repo: { url: repo, ref: args.value("ref"), integrationId } };
  }
  return { directory: resolve(args.positionals[0] ?? ".") };
}

export async function deploy(ctx: Context): Promise<void> {
  const { args, out } = ctx;
  atMost(ctx, 1);
  const source = sourceFromFlags(ctx);
  const secrets = secretsFromFlags(ctx);
  const client = ctx.client();
  const progress = new Progress(ctx);
  progress.phase = "Looking up the deployment";
  let name = args.value("name") ?? "";
  try {
    const result = await interruptible(
      ctx,
      () => `See: slipway status ${name || "NAME"}`,
      (signal) =>
        deployWithSdk(client, {
          ...source,
          name: args.value("name"),
          config: args.value("config"),
          secrets,
          wait: !args.bool("no-wait"),
          signal,
          onEvent: (e) => {
            if (e.type === "created") {
              name = e.deployment.name;
              out.line(`Created deployment ${e.deployment.name} (${e.deployment.id}).`);
              out.event({ event: "created", deployment_id: e.deployment.id, name: e.deployment.name });
            } else if (e.type === "packed") {
              progress.phase = `Uploading ${e.directory} (${formatBytes(e.bytes)})`;
            } else if (e.type === "uploaded") {
              out.line(`Uploaded ${e.directory}.`);
            } else if (e.type === "queued") {
              name = e.deployment.name;
              progress.phase = "QUEUED";
              out.line(`Revision ${e.revisionId} queued.`);
              out.event({ event: "queued", deployment_id: e.deployment.id, revision_id: e.revisionId });
            } else {
              progress.onEvent(e);
            }
          },
        }),
    );
    progress.stop();
    if (args.bool("no-wait")) return;
    await report(ctx, result.deployment, result, progress.started);
  } finally {
    progress.stop();
  }
}
