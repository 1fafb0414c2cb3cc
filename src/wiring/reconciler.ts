import type { AppDeps } from "../deps.ts";
import { APP_PORT } from "../protocol/listener.ts";
import type { ReconcilerLogger, ReconcilerLookups } from "../reconciler/context.ts";
import { Reconciler } from "../reconciler/reconciler.ts";
import { sourceResolver } from "../reconciler/sources.ts";
import { DomainChecker } from "../resources/domains/checker.ts";
import { VerifiedHosts } from "../resources/domains/hosts.ts";
import { listenerLiveness } from "../resources/listeners/store.ts";
import { firstOrganizationId } from "../resources/organizations/service.ts";
import { registryLogin } from "../resources/push-tokens/login.ts";
import { openUploadedTarball } from "../resources/uploads/read.ts";
import { LocalRuntime } from "../runtimes/local/runtime.ts";
import { PodmanImageBuilder } from "../runtimes/remote/builder.ts";
import { edgeTls } from "./tls.ts";

/** What the reconciler reads of the resources' tables (context.ts says why it is handed down). */
export const reconcilerLookups: ReconcilerLookups = { firstOrganizationId, listenerLiveness };

/** Builds revisions' sources: code hosts, uploads, templates, images (reconciler/sources.ts). */
export const resolverOf = (db: AppDeps["db"], config: AppDeps["config"]) =>
  sourceResolver(db.orm, config, openUploadedTarball);

export interface RunningReconciler {
  reconciler: Reconciler;
  runtime: LocalRuntime;
  /** Where apps are served: `http://<name>.<apps domain>:<port>`. */
  appsPort: number;
  /** Stops claiming, hands in-progress work back, then stops every app process and the apps listener. */
  stop(): Promise<void>;
}

/** The reconciler with the `local` runtime, as `slipway serve` runs it. */
export async function startReconciler(deps: AppDeps, logger: ReconcilerLogger): Promise<RunningReconciler> {
  const { config } = deps;
  // Verified custom domains the edge serves, and the checks that verify pending ones (docs/domains.md).
  const customHosts = new VerifiedHosts(deps.db);
  await customHosts.start();
  const domainChecker = new DomainChecker(deps.db, {
    dnsResolver: config.domains.dnsResolver,
    checkEveryMs: config.domains.checkEveryMs,
    appsDomain: config.apps.domain,
    logger,
  });
  // HTTPS on the apps edge (docs/https.md): certificates ordered once the apps port answers.
  const tls = await edgeTls(deps, logger);
  const runtime = new LocalRuntime({
    customHosts,
    tls: tls.runtime,
    dataDir: config.dataDir,
    appsPort: config.apps.port,
    appsDomain: config.apps.domain,
    appsHost: config.host,
    // With HTTPS on, the Node edge serves the plain port too, whatever SLIPWAY_EDGE says (routing/edge.ts).
    edge: config.apps.edge,
    healthTimeoutMs: config.apps.healthTimeoutMs,
    healthTimeoutMaxMs: config.apps.healthTimeoutMaxMs,
    scaling: {
      targetConcurrency: config.scaling.targetConcurrency,
      windowMs: config.scaling.windowMs,
      cooldownMs: config.scaling.cooldownMs,
      idleScaleDownMs: config.scaling.idleScaleDownMs,
      queueCpuTarget: config.scaling.queueCpuTarget,
    },
    containerEngine: config.containers.engine,
    containerNetwork: config.containers.network,
    logger,
    limits: config.limits,
    sandbox: config.sandbox.mode,
    uidRange: config.sandbox.uidRange,
    pidsMax: config.sandbox.pidsMax,
    egress: {
      egress: config.sandbox.egress,
      egressAllow: config.sandbox.egressAllow,
      mirrors: config.sandbox.mirrors,
    },
    redisServer: config.apps.redisServer,
    packageIndexes: config.packageIndexes,
  });
  const appsPort = await runtime.start();
  const detach = deps.processes?.attach(runtime);
  // A port of 0 means "any": the apps URL must name the one actually bound.
  const bound = { ...config, apps: { ...config.apps, port: appsPort } };
  const registry = config.listeners.registryUrl;
  const imageBuilder =
    registry === undefined
      ? undefined
      : new PodmanImageBuilder({
          dataDir: config.dataDir,
          registry: {
            url: registry,
            login: registryLogin(config.listeners),
            insecure: config.listeners.registryInsecure,
          },
          baseImages: {
            node: config.listeners.buildBaseImage,
            python: config.listeners.buildBaseImagePython,
          },
          port: APP_PORT,
          limits: config.limits,
          indexes: config.packageIndexes,
        });
  const reconciler = new Reconciler({
    config: bound,
    db: deps.db,
    keyring: deps.keyring,
    runtimes: { local: runtime },
    imageBuilder,
    resolveSource: resolverOf(deps.db, bound),
    lookups: reconcilerLookups,
    logger,
  });
  try {
    await reconciler.start();
  } catch (err) {
    detach?.();
    await runtime.close();
    await customHosts.stop();
    throw err;
  }
  domainChecker.start();
  tls.start();
  let stopping: Promise<void> | undefined;
  return {
    reconciler,
    runtime,
    appsPort,
    stop: () => {
      stopping ??= (async () => {
        await domainChecker.stop();
        await tls.stop();
        await reconciler.stop();
        detach?.();
        await runtime.close();
        await customHosts.stop();
      })();
      return stopping;
    },
  };
}
