import { type Engine, execEngine, lastLine } from "../engine/engine.ts";
import { SourceError } from "../interface.ts";
import { abortError, describeExit, run } from "../shared/exec.ts";

/** The label whose value becomes the deployment's `image_version`. */
export const VERSION_LABEL = "org.opencontainers.image.version";

/** The tag of an image reference as written ("reg:5000/app:1.2" → "1.2"); undefined without one. */
export function imageTag(ref: string): string | undefined {
  const name = ref.split("@")[0] ?? "";
  const last = name.slice(name.lastIndexOf("/") + 1);
  const colon = last.indexOf(":");
  return colon === -1 ? undefined : last.slice(colon + 1) || undefined;
}

/**
 * Docker Hub's implicit names spelled out ("nginx:1" → "docker.io/library/nginx:1"): podman
 * without search registries refuses short names, and docker means exactly this by them.
 */
export function qualifiedImage(ref: string): string {
  const slash = ref.indexOf("/");
  if (slash === -1) return `docker.io/library/${ref}`;
  const first = ref.slice(0, slash);
  if (first.includes(".") || first.includes(":") || first === "localhost") return ref;
  return `docker.io/${ref}`;
}

export interface InspectedImage {
  /** The image id: what a revision runs, so a tag moved later does not change a deployed revision. */
  id: string;
  labels: Record<string, string>;
}

/** The image as the engine's store has it, or undefined when it is not there. */
export async function inspectImage(engine: Engine, ref: string): Promise<InspectedImage | undefined> {
  const result = await execEngine(engine, [
    "image",
    "inspect",
    "--format",
    // `json .Id` is refused by podman 4's templates; an id never holds a space.
    "{{.Id}} {{json .Config.Labels}}",
    "--",
    ref,
  ]);
  if (!result.ok) return undefined;
  const line = result.stdout.trim().split("\n")[0] ?? "";
  const space = line.indexOf(" ");
  try {
    const id = line.slice(0, space);
    const raw: unknown = JSON.parse(line.slice(space + 1));
    if (space <= 0) return undefined;
    const labels: Record<string, string> = {};
    if (typeof raw === "object" && raw !== null) {
      for (const [k, v] of Object.entries(raw)) if (typeof v === "string") labels[k] = v;
    }
    return { id, labels };
  } catch {
    return undefined;
  }
}

/** `image_version`: the image's version label, else the tag as written, else null. */
export function imageVersion(ref: string, image: InspectedImage): string | null {
  const label = image.labels[VERSION_LABEL]?.trim();
  if (label) return label;
  return imageTag(ref) ?? null;
}

/** A tag that is expected to move: checked against the registry even when a copy is here. */
function moving(ref: string): boolean {
  if (ref.includes("@")) return false;
  const tag = imageTag(ref);
  return tag === undefined || tag === "latest";
}

/**
 * Makes sure `ref` is in the engine's store. An image already here (built or pushed on this
 * machine) is used without a registry; a moving tag is pulled again, falling back to the copy
 * here when the registry does not answer. A pull that fails with no copy here is a SourceError.
 */
export async function ensureImage(
  engine: Engine,
  ref: string,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const here = (await inspectImage(engine, ref)) !== undefined;
  if (here && !moving(ref)) {
    log(`Image ${ref} is in ${engine.name}'s store; not pulling.`);
    return;
  }
  const name = qualifiedImage(ref);
  log(`$ ${engine.name} pull ${name}`);
  const lines: string[] = [];
  const result = await run(engine.name, ["pull", "--", name], {
    cwd: "/",
    env: engine.env,
    signal,
    onLine: (line) => {
      lines.push(line);
      log(line);
    },
  });
  if (signal.aborted) throw abortError(signal);
  if (result.code === 0) return;
  if (here) {
    log(`slipway: pulling ${name} failed; using the copy of ${ref} already in ${engine.name}'s store`);
    return;
  }
  const message = `the image ${ref} could not be pulled (${engine.name} pull ${describeExit(result)}: ${lastLine(lines.join("\n"))})`;
  log(`error: ${message}`);
  throw new SourceError(message);
}
