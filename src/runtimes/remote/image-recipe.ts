import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { buildArgFlags, writeComposedDockerfile } from "../build/dockerfile.ts";
import { resolveToolchainEnv } from "../build/plan/toolchain-env.ts";
import type { BuildPlan } from "../build/plan/types.ts";
import { containerfile, envLine } from "./containerfile.ts";
import { STATIC_SERVER_FILE, STATIC_SERVER_SCRIPT } from "./static-server.ts";

/** What a plan's toolchain env names as `{path}` and `{home}` in an image (official images' PATH, root). */
const IMAGE_ENV = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", HOME: "/root" };

/** What images built for a listener start FROM, by the language the plan detected. */
export interface BaseImages {
  /** SLIPWAY_BUILD_BASE_IMAGE: Node apps, static sites (their file server is Node) and the rest. */
  node: string;
  /** SLIPWAY_BUILD_BASE_IMAGE_PYTHON. */
  python: string;
}

/** What `podman build` is given for one revision. */
export interface ImageRecipe {
  file: string;
  /** The build context. */
  context: string;
  /** `--build-arg` flags. */
  buildArgs: string[];
  /** The image starts from (a Dockerfile names its own). */
  from: string;
}

export interface RecipeInput {
  plan: BuildPlan;
  /** The revision's build directory: the source is at `<dir>/app`. */
  dir: string;
  bases: BaseImages;
  port: number;
  revisionId: string;
}

/**
 * Writes what podman builds a listener's image from: for a process plan a generated Containerfile
 * on the language's base image; for a static site the same with a small file server as CMD; for a
 * source's own Dockerfile that file with its `dockerfile_lines`, PORT and the revision label added.
 */
export async function writeImageRecipe(r: RecipeInput): Promise<ImageRecipe> {
  const { plan, dir } = r;
  const appDir = join(dir, "app");
  const label = `LABEL dev.slipway.revision-id=${JSON.stringify(r.revisionId)}`;
  if (plan.kind === "dockerfile") {
    // The app config's env and PORT as a listener's pod gets them (baked in, as for generated images).
    const env = Object.entries(plan.env).map(([name, value]) => envLine(name, value));
    const file = await writeComposedDockerfile(appDir, plan, dir, [...env, `ENV PORT=${r.port}`, label]);
    return { file, context: appDir, buildArgs: buildArgFlags(plan), from: `its own ${plan.file}` };
  }
  const base = plan.language === "python" ? r.bases.python : r.bases.node;
  // The image's app is at /app (WORKDIR), built as root, with a Debian-style image's PATH.
  const env = { ...resolveToolchainEnv(plan.toolchainEnv, IMAGE_ENV, "/app"), ...plan.env };
  const common = { baseImage: base, steps: plan.steps, env, port: r.port, revisionId: r.revisionId };
  let text: string;
  if (plan.kind === "static") {
    await writeFile(join(dir, STATIC_SERVER_FILE), STATIC_SERVER_SCRIPT);
    const served = plan.root === "." ? "/app" : `/app/${plan.root}`;
    text = containerfile({
      ...common,
      copies: [[STATIC_SERVER_FILE, `/slipway/${STATIC_SERVER_FILE}`]],
      start: ["node", `/slipway/${STATIC_SERVER_FILE}`, served, plan.spa === true ? "1" : "0"],
    });
  } else {
    text = containerfile({ ...common, extraLines: plan.dockerfileLines ?? [], start: plan.start });
  }
  const file = join(dir, "Containerfile");
  await writeFile(file, text);
  return { file, context: dir, buildArgs: [], from: base };
}
