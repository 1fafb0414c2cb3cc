// `slipway domains add|ls|rm NAME [HOST]`: a deployment's custom domains (docs/domains.md).
import { SlipwayError, unwrap } from "../../sdk/client.ts";
import { actionError } from "../args.ts";
import { atMost, type Context, need, requireDeployment } from "../context.ts";

interface Domain {
  id: string;
  hostname: string;
  verification: { status: string; record_name: string; token: string; reason: string | null };
  certificate: { status: string; expires_at: string | null; reason: string | null };
}

const row = (d: Domain) => ({
  hostname: d.hostname,
  verification: d.verification.status,
  certificate: d.certificate.status,
  why: d.verification.reason ?? d.certificate.reason ?? "",
  id: d.id,
});
const COLUMNS = ["hostname", "verification", "certificate", "why", "id"];

export async function domains(ctx: Context): Promise<void> {
  const [action] = ctx.args.positionals;
  const actions = ["add", "ls", "rm"];
  if (!action || !actions.includes(action)) throw actionError(action, actions);
  const name = need(ctx, 1, "deployment NAME");
  const client = ctx.client();
  const dep = await requireDeployment(client, name);
  const path = { deployment_id: dep.id };
  if (action === "ls") {
    atMost(ctx, 2);
    const list = await unwrap(
      client.api.GET("/v2/deployments/{deployment_id}/domains", { params: { path } }),
    );
    ctx.out.result(list, { rows: list.map(row), columns: COLUMNS });
    return;
  }
  const host = need(ctx, 2, "HOST");
  atMost(ctx, 3);
  if (action === "add") {
    const d = await unwrap(
      client.api.POST("/v2/deployments/{deployment_id}/domains", {
        params: { path },
        body: { hostname: host },
      }),
    );
    ctx.out.result(d, { rows: [row(d)], columns: COLUMNS });
    ctx.out.line(
      `Create a DNS TXT record ${d.verification.record_name} holding ${d.verification.token}; ${d.hostname} is served once it is seen.`,
    );
    return;
  }
  // rm: by hostname, as typed (the server stores it in lower case, without a final dot).
  const wanted = host.trim().toLowerCase().replace(/\.$/, "");
  const list = await unwrap(client.api.GET("/v2/deployments/{deployment_id}/domains", { params: { path } }));
  const found = list.find((d) => d.hostname === wanted);
  if (!found) throw new SlipwayError(404, `${dep.name} has no domain ${wanted}.`);
  const gone: Domain = await unwrap(
    client.api.DELETE("/v2/deployments/{deployment_id}/domains/{domain_id}", {
      params: { path: { ...path, domain_id: found.id } },
    }),
  );
  ctx.out.result(gone, { rows: [row(gone)], columns: COLUMNS });
  ctx.out.line(`Removed ${gone.hostname} from ${dep.name}.`);
}
