// What every client command gets: its parsed arguments, the output, and the API client.
import { createSlipway, type Deployment, type Slipway, SlipwayError } from "../sdk/client.ts";
import { findDeployment } from "../sdk/deploy.ts";
import { type FlagSpec, type Parsed, parseArgs, UsageError } from "./args.ts";
import { Output } from "./output.ts";
import { resolveCredentials } from "./profile.ts";
import { ask, askHidden } from "./prompt.ts";

export interface Context {
  /** The command's name, as typed (`deploy`, `keys`, …). */
  command: string;
  args: Parsed;
  out: Output;
  /** False with --no-input or when stdin is not a terminal. */
  canPrompt: boolean;
  client(): Slipway;
  prompt(question: string): Promise<string>;
  /** A prompt whose answer is not echoed (keys, passwords). */
  promptHidden(question: string): Promise<string>;
}

export function makeContext(command: string, argv: string[], spec: FlagSpec): Context {
  const args = parseArgs(argv, spec);
  const out = new Output(args.bool("json"));
  let client: Slipway | undefined;
  return {
    command,
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
    prompt: (question) => ask(question),
    promptHidden: (question) => askHidden(question),
  };
}

/** The positional at `index`, or a usage error naming it. */
export function need(ctx: Context, index: number, what: string): string {
  const v = ctx.args.positionals[index];
  if (!v) throw new UsageError(`Missing ${what}.`, true);
  return v;
}

/** At most `count` positionals: a stray word is a usage error, not silently ignored. */
export function atMost(ctx: Context, count: number): void {
  const extra = ctx.args.positionals.slice(count);
  if (extra.length) throw new UsageError(`Unexpected argument ${JSON.stringify(extra[0])}.`, true);
}

/** The deployment of that name, or a not-found error (exit 4). */
export async function requireDeployment(client: Slipway, name: string): Promise<Deployment> {
  const dep = await findDeployment(client, name);
  if (!dep) throw new SlipwayError(404, `No deployment named ${name} in this workspace.`);
  return dep;
}
