// `slipway listener render`: the objects the listener would apply for a desired state (as
// `GET /v2/listeners/{id}/desired` serves it), printed without a cluster, as `helm template`
// does: YAML as a document stream, or JSON as a v1 List.
import { readFileSync } from "node:fs";
import { dumpYaml } from "@kubernetes/client-node";
import { FormatRegistry } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ConfigError } from "../config.ts";
import { DesiredState, hostOf } from "../protocol/listener.ts";
import { manifestsFor, partsOf } from "./manifests/index.ts";
import type { K8sObject } from "./manifests/types.ts";
import { parseManifestFlags, RENDER_USAGE } from "./options.ts";

/** Generated passwords are the listener's (kept in their Secrets): a render shows this instead. */
export const PASSWORD_PLACEHOLDER = "generated-by-the-listener";

// TypeBox checks formats only once they are registered (the server's validator has its own).
if (!FormatRegistry.Has("uuid"))
  FormatRegistry.Set("uuid", (v) =>
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v),
  );
if (!FormatRegistry.Has("date-time")) FormatRegistry.Set("date-time", (v) => !Number.isNaN(Date.parse(v)));

/** Every object of every desired deployment, in apply order; throws ConfigError on a bad input. */
export function renderObjects(
  desired: unknown,
  argv: string[],
): { objects: K8sObject[]; output: "yaml" | "json" } {
  if (!Value.Check(DesiredState, desired)) {
    const first = [...Value.Errors(DesiredState, desired)][0];
    throw new ConfigError(
      `the desired state is not what GET /v2/listeners/{id}/desired answers: ${first ? `${first.path || "/"}: ${first.message}` : "invalid"}.`,
    );
  }
  const flags = parseManifestFlags(argv, ["output", "desired"]);
  const output = flags.one("output") ?? "yaml";
  if (output !== "yaml" && output !== "json")
    throw new ConfigError(`--output must be yaml or json, got "${output}".`);
  const options = { ...flags.manifests, listenerId: desired.listener_id };
  const objects: K8sObject[] = [];
  for (const raw of desired.deployments) {
    const d = flags.domain ? { ...raw, host: hostOf({ appsDomain: flags.domain }, raw.name) } : raw;
    const parts = partsOf(d);
    const passwords = {
      ...(parts.database ? { database: PASSWORD_PLACEHOLDER } : {}),
      ...(parts.cache ? { cache: PASSWORD_PLACEHOLDER } : {}),
    };
    objects.push(...manifestsFor(d, options, passwords));
  }
  return { objects, output };
}

export function formatObjects(objects: K8sObject[], output: "yaml" | "json"): string {
  if (output === "json")
    return `${JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }, null, 2)}\n`;
  return objects.map((o) => `---\n${dumpYaml(o)}`).join("");
}

/** The command: reads --desired FILE (or - for stdin), prints the objects. */
export function renderCommand(argv: string[], stdin: () => string, print: (text: string) => void): void {
  if (argv.includes("--help") || argv.includes("-h")) {
    print(`${RENDER_USAGE}\n`);
    return;
  }
  const flags = parseManifestFlags(argv, ["output", "desired"]);
  const source = flags.one("desired");
  if (!source) throw new ConfigError(`--desired FILE (or - for stdin) is required.\n${RENDER_USAGE}`);
  let text: string;
  try {
    text = source === "-" ? stdin() : readFileSync(source, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read ${source}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let desired: unknown;
  try {
    desired = JSON.parse(text);
  } catch {
    throw new ConfigError(
      `${source === "-" ? "stdin" : source} is not JSON (save the answer of GET /v2/listeners/{id}/desired).`,
    );
  }
  const { objects, output } = renderObjects(desired, argv);
  print(formatObjects(objects, output));
}
