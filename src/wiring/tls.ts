import type { AppDeps } from "../deps.ts";
import { AcmeIssuer } from "../resources/certificates/acme.ts";
import { InternalIssuer } from "../resources/certificates/internal.ts";
import type { Issuer } from "../resources/certificates/issuer.ts";
import { CertificateKeeper } from "../resources/certificates/keeper.ts";
import { challengeAnswer } from "../resources/certificates/store.ts";
import type { RuntimeTls } from "../runtimes/local/routing/tls.ts";
import { FileCertificates } from "../runtimes/local/routing/tls-files.ts";

/** HTTPS on the apps edge as SLIPWAY_APPS_TLS says (docs/https.md): the runtime's part and the keeper. */
export interface EdgeTls {
  /** For LocalRuntimeOptions.tls; undefined when TLS is off. */
  runtime: RuntimeTls | undefined;
  keeper: CertificateKeeper | undefined;
  /** Starts ordering (once the apps port answers ACME's HTTP-01 requests). */
  start(): void;
  stop(): Promise<void>;
}

export async function edgeTls(
  deps: Pick<AppDeps, "config" | "db" | "keyring">,
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void },
): Promise<EdgeTls> {
  const { tls } = deps.config.apps;
  const base = { port: tls.port, handshakeTimeoutMs: tls.handshakeTimeoutMs, logger };
  if (tls.mode === "off") return { runtime: undefined, keeper: undefined, start() {}, stop: async () => {} };
  if (tls.mode === "files") {
    const dir = tls.dir ?? "";
    return {
      runtime: { ...base, certificates: new FileCertificates(dir, logger) },
      keeper: undefined,
      start() {},
      stop: async () => {},
    };
  }
  let issuer: Issuer;
  if (tls.mode === "internal") {
    const internal = new InternalIssuer(deps.db, deps.keyring, deps.config.dataDir);
    await internal.start();
    logger.info(
      { path: internal.rootPath },
      `apps edge: HTTPS by Slipway's internal CA; trust its root certificate, ${internal.rootPath}, to reach apps without warnings`,
    );
    issuer = internal;
  } else {
    const { directoryUrl, ca, email } = tls.acme;
    // config/tls.ts refuses acme without a directory URL.
    issuer = new AcmeIssuer(deps.db, deps.keyring, { directoryUrl: directoryUrl ?? "", ca, email });
  }
  const keeper = new CertificateKeeper(deps.db, deps.keyring, issuer, {
    appsDomain: deps.config.apps.domain,
    checkEveryMs: tls.checkEveryMs,
    // A handshake waits for an on-demand order a little less than its own timeout.
    onDemandWaitMs: Math.max(100, tls.handshakeTimeoutMs - 500),
    logger,
  });
  return {
    runtime: {
      ...base,
      certificates: keeper,
      challenge: tls.mode === "acme" ? (token: string) => challengeAnswer(deps.db.orm, token) : undefined,
    },
    keeper,
    start: () => keeper.start(),
    stop: () => keeper.stop(),
  };
}
