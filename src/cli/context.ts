// What every client command gets: its parsed arguments, the output, and the API client.
import { createInterface } from "node:readline/promises";
import { createSlipway, type Deployment, type Slipway, SlipwayError, unwrap } from "../sdk/client.ts";
import { type FlagSpec, type Parsed, parseArgs, UsageError } from "./args.ts";
import { Output } from "./output.ts";
import { resolveCredentials } from "./profile.ts";

export interface Context {
  args: Parsed;
  out: Output;
  /** False with --no-input or when stdin is not a terminal. */
  canPrompt: boolean;
  client(): Slipway;
  prompt(question: string): Promise<string>;
}

export function makeContext(argv: string[], spec: FlagSpec): Context {
  const args = parseArgs(argv, spec);
  const out = new Output(args.bool("json"));
  let client: Slipway | undefined;
  return {
    args,
    out,
    canPrompt: !args.bool("no-input") && Boolean(process.stdin.isTTY),
    client: () => {
      if (!client) {
        const creds = resolveCredentials({
          url: args.value("url"),
          apiKey: args.value("api-key"),
          profile: args.value("profile"),
          workspace: args.value("workspace"),
        });
        client = createSlipway({ baseUrl: creds.url, apiKey: creds.apiKey, workspace: creds.workspace });
      }
      return client;
    },
    prompt: async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return (await rl.question(question)).trim();
      } finally {
        rl.close();
      }
    },
  };
}

/** The positional at `index`, or a usage error naming it. */
export function need(ctx: Context, index: number, what: string): string {
  const v = ctx.args.positionals[index];
  if (!v) throw new UsageError(`Missing ${what}.`);
  return v;
}

/** The deployment of that exact name in the workspace, or null. */
export async function deploymentNamed(client: Slipway, name: string): Promise<Deployment | null> {
  const page = await unwrap(client.api.GET("/v2/deployments", { params: { query: { name, limit: 1 } } }));
  return page.resources[0] ?? null;
}

/** The deployment of that name, or a not-found error (exit 4). */
export async function requireDeployment(client: Slipway, name: string): Promise<Deployment> {
  const dep = await deploymentNamed(client, name);
  if (!dep) throw new SlipwayError(404, `No deployment named ${name} in this workspace.`);
  return dep;
}
