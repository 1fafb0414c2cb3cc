// `slipway secrets list|set|unset NAME …`: each change is a new revision, as a PATCH makes.
import { unwrap } from "../../sdk/client.ts";
import { mergeSecrets } from "../../sdk/deploy.ts";
import { actionError, parseAssignment, UsageError } from "../args.ts";
import { type Context, need, requireDeployment } from "../context.ts";

export async function secrets(ctx: Context): Promise<void> {
  const [action, name, ...rest] = ctx.args.positionals;
  if (!action || !["list", "set", "unset"].includes(action))
    throw actionError(action, ["list", "set", "unset"]);
  need(ctx, 1, "deployment NAME");
  const client = ctx.client();
  const dep = await requireDeployment(client, name ?? "");
  if (action === "list") {
    ctx.out.result(dep.secrets, { rows: dep.secrets, columns: ["name", "value"] });
    return;
  }
  if (!rest.length)
    throw new UsageError(
      action === "set" ? "Give NAME=VALUE pairs to set." : "Give the secret names to unset.",
      true,
    );
  let next: { name: string; value: string }[];
  if (action === "set") {
    next = mergeSecrets(
      dep.secrets,
      rest.map((r) => parseAssignment(r, "A secret")),
    );
  } else {
    const unknown = rest.filter((n) => !dep.secrets.some((s) => s.name === n));
    if (unknown.length) throw new UsageError(`${dep.name} has no secret ${unknown.join(", ")}.`);
    next = mergeSecrets(dep.secrets, [], rest);
  }
  const after = await unwrap(
    client.api.PATCH("/v2/deployments/{deployment_id}", {
      params: { path: { deployment_id: dep.id } },
      body: { secrets: next },
    }),
  );
  ctx.out.line(
    `Secrets of ${dep.name}: ${after.secrets.map((s) => s.name).join(", ") || "(none)"}; new revision ${after.latest_revision_id}.`,
  );
  ctx.out.event({
    event: "updated",
    deployment_id: dep.id,
    revision_id: after.latest_revision_id,
    secrets: after.secrets.map((s) => s.name),
  });
}
