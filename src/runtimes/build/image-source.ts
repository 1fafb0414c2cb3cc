import type { EngineFinder } from "../engine/finder.ts";
import { BuildError } from "../interface.ts";
import type { BuildRecord } from "./app-config.ts";
import { ensureImage, imageVersion, inspectImage, qualifiedImage } from "./image.ts";

/** What an image revision's phases do; the runtime calls these for `kind: "image"` sources. */

export function noEngineMessage(finder: EngineFinder): string {
  return `no container engine is usable on this machine (${finder.candidates.join("/")})`;
}

/** prepare: the image into the engine's store (a failed pull is a SourceError → CREATE_FAILED). */
export async function fetchImage(
  finder: EngineFinder,
  ref: string,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const engine = await finder.usable();
  if (engine === undefined) {
    log(`${noEngineMessage(finder)}; ${ref} cannot be pulled or run.`);
    return;
  }
  await ensureImage(engine, ref, signal, log);
}

/** build: the record of the exact image the revision runs (its id) and its `image_version`. */
export async function imageRecord(
  finder: EngineFinder,
  ref: string,
  log: (line: string) => void,
): Promise<BuildRecord> {
  const base = { version: 1, kind: "image", ref, healthcheck: "/", env: {} } as const;
  const engine = await finder.usable();
  if (engine === undefined) return { ...base, image: ref };
  const found = (await inspectImage(engine, ref)) ?? (await inspectImage(engine, qualifiedImage(ref)));
  if (found === undefined) {
    const message = `the image ${ref} is not in ${engine.name}'s store`;
    log(`error: ${message}`);
    throw new BuildError(message);
  }
  const version = imageVersion(ref, found);
  log(
    `Image ${ref} is ${found.id.replace(/^sha256:/, "").slice(0, 12)}; image_version ${version ?? "none"}.`,
  );
  return { ...base, image: found.id, imageVersion: version };
}

/** isBuilt: an image revision is runnable while its image is still in the store (not pruned). */
export async function imagePresent(finder: EngineFinder, image: string): Promise<boolean> {
  const engine = await finder.usable();
  if (engine === undefined) return true;
  return (await inspectImage(engine, image)) !== undefined;
}
