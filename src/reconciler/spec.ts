import { randomBytes } from "node:crypto";
import { servicePasswordEnc } from "../core/deployments/runtime-store.ts";
import { readRevisionSecrets } from "../core/deployments/secrets.ts";
import { encryptionContext } from "../crypto/envelope.ts";
import type { RevisionSpec } from "../runtimes/interface.ts";
import type { Worker } from "./context.ts";
import { resolveSecretReferences } from "./secret-refs.ts";
import { type RevisionWork, textField } from "./work.ts";

/** What a runtime is given of a revision: where its code is, how to build it, its environment. */
export async function specFor(
  w: Worker,
  work: RevisionWork,
  env: Record<string, string>,
): Promise<RevisionSpec> {
  const cfg = work.sourceRevisionConfig;
  return {
    deploymentId: work.deploymentId,
    workspaceId: work.workspaceId,
    deploymentName: work.deploymentName,
    revisionId: work.id,
    source: await w.resolveSource(work),
    // Built-in templates ship their app config as slipway.json.
    frameworkConfigPath:
      textField(cfg, "framework_config_path") ??
      (work.source === "internal_template" ? "slipway.json" : undefined),
    installCommand: textField(work.buildConfig, "install_command"),
    buildCommand: textField(work.buildConfig, "build_command"),
    resourceSpec: work.resourceSpec,
    deploymentType: work.deploymentType,
    env,
    trusted: work.organizationId === (await firstOrganization(w)),
  };
}

let first: { db: Worker["db"]; id: Promise<string | undefined> } | undefined;

/** Looked up once per database: organizations are never deleted, so the first one stays first. */
function firstOrganization(w: Worker): Promise<string | undefined> {
  if (first?.db !== w.db) first = { db: w.db, id: w.lookups.firstOrganizationId(w.db.orm) };
  return first.id;
}

/** The revision's secrets, decrypted: they go only into the app's environment and the log redactor. */
export async function revisionSecrets(w: Worker, revisionId: string): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const s of await readRevisionSecrets(w.db.orm, w.keyring, revisionId)) env[s.name] = s.value;
  return env;
}

/** `secret_references` read now, so a missing one fails the deploy (and a changed file counts at each deploy). */
export function referencedSecrets(w: Worker, work: RevisionWork): Promise<Record<string, string>> {
  return resolveSecretReferences(w.config.containers.secretRefsDir, work.secretReferences);
}

/**
 * The password of the deployment's own Redis (a runtime starts one only when the revision asks):
 * generated and stored encrypted on first use, the first writer winning, so every process and
 * restart gives the same one.
 */
export async function redisPassword(w: Worker, deploymentId: string): Promise<string> {
  const context = encryptionContext("deployments", "redis_password_enc", deploymentId);
  const fresh = w.keyring.encrypt(randomBytes(24).toString("hex"), context);
  const enc = await servicePasswordEnc(w.db.orm, deploymentId, "redis", fresh);
  if (!enc) throw new Error(`deployment ${deploymentId} is gone`);
  return w.keyring.decrypt(enc, context);
}

/** The whole environment of an already-deployed revision, and the values the log redactor hides. */
export async function envFor(
  w: Worker,
  work: RevisionWork,
): Promise<{ env: Record<string, string>; secrets: string[]; redisPassword: string }> {
  const env = await revisionSecrets(w, work.id);
  // A remote data plane resolves references and runs its own database.
  const remote = w.runtimes.of(work.runtime).remote === true;
  if (!remote) Object.assign(env, await referencedSecrets(w, work));
  const redis = await redisPassword(w, work.deploymentId);
  const secrets = [...Object.values(env), redis];
  if (w.appDbs && !remote) {
    const db = await w.appDbs.provision(w.db.orm, work.deploymentId, work.resourceSpec);
    env.DATABASE_URI = db.uri;
    env.POSTGRES_URI = db.uri;
    secrets.push(db.password);
  }
  return { env, secrets, redisPassword: redis };
}
