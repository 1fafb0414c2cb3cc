import {
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomUUID,
  sign,
  verify,
  X509Certificate,
} from "node:crypto";

/**
 * Slipway as the token server of a Docker distribution registry (`auth: token` in its config):
 * registry bearer tokens are JWTs signed with the configured key, carrying the certificate in `x5c`
 * so the registry checks them against its `rootcertbundle`. Push tokens, the passwords clients log
 * in with, are JWTs of the same key for another audience: the registry never accepts one itself.
 */

export class RegistryTokenError extends Error {}

/** An action on a repository, as the registry's token scopes name them. */
export type RegistryAction = "pull" | "push";

export interface RegistryAccess {
  type: "repository";
  name: string;
  actions: RegistryAction[];
}

/** What a push token lets its holder do, read back from it. */
export interface PushGrant {
  /** Who it was issued to: `deployment:<id>` (a client or Slipway's build) or `listener:<id>` (a cluster's pulls). */
  subject: string;
  /** The deployment whose repository it is: the token endpoint refuses it once that deployment is gone. */
  workspaceId: string;
  deploymentId: string;
  /** The repository path inside the registry (`<workspace id>/<deployment name>`). */
  repository: string;
  actions: RegistryAction[];
  expiresAt: Date;
}

/** Audience of push tokens: never the registry's service name, so the registry refuses them as bearers. */
const PUSH_AUDIENCE = "slipway-registry-login";
export const TOKEN_ISSUER = "slipway";

interface Alg {
  name: "ES256" | "RS256";
  hash: "sha256";
  /** JOSE wants ECDSA signatures as r||s, not DER. */
  dsaEncoding?: "ieee-p1363";
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

function algOf(key: KeyObject): Alg {
  if (key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1") {
    return { name: "ES256", hash: "sha256", dsaEncoding: "ieee-p1363" };
  }
  if (key.asymmetricKeyType === "rsa") return { name: "RS256", hash: "sha256" };
  throw new RegistryTokenError("the registry token key must be an EC P-256 or an RSA private key");
}

export class RegistryTokenSigner {
  /** The key as sign() and verify() take it (with ECDSA's JOSE encoding). */
  private readonly signKey: { key: KeyObject; dsaEncoding?: "ieee-p1363" };
  private readonly verifyKey: { key: KeyObject; dsaEncoding?: "ieee-p1363" };
  private readonly certDer: string;
  private readonly alg: Alg;

  /** Throws RegistryTokenError when the key or certificate is unusable or they do not belong together. */
  constructor(
    keyPem: string,
    certPem: string,
    /** The registry's `auth.token.service`, the audience of its bearer tokens. */
    readonly service: string,
  ) {
    let key: KeyObject;
    try {
      key = createPrivateKey(keyPem);
    } catch {
      throw new RegistryTokenError("the registry token key is not a PEM private key");
    }
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(certPem);
    } catch {
      throw new RegistryTokenError("the registry token certificate is not a PEM certificate");
    }
    this.alg = algOf(key);
    const publicKey = createPublicKey(key);
    const spki = (k: KeyObject) => k.export({ type: "spki", format: "der" }).toString("base64");
    if (spki(cert.publicKey) !== spki(publicKey)) {
      throw new RegistryTokenError("the registry token certificate is not the certificate of its key");
    }
    if (Date.parse(cert.validTo) <= Date.now()) {
      throw new RegistryTokenError(`the registry token certificate expired on ${cert.validTo}`);
    }
    this.certDer = cert.raw.toString("base64");
    const encoding = this.alg.dsaEncoding ? { dsaEncoding: this.alg.dsaEncoding } : {};
    this.signKey = { key, ...encoding };
    this.verifyKey = { key: publicKey, ...encoding };
  }

  private signJwt(claims: Record<string, unknown>): string {
    const header = { typ: "JWT", alg: this.alg.name, x5c: [this.certDer] };
    const input = `${b64url(header)}.${b64url(claims)}`;
    const signature = sign(this.alg.hash, Buffer.from(input), this.signKey);
    return `${input}.${signature.toString("base64url")}`;
  }

  /** Claims of a JWT this signer made, or undefined when its signature or shape is not ours. */
  private readJwt(token: string): Record<string, unknown> | undefined {
    const parts = token.split(".");
    if (parts.length !== 3) return undefined;
    const [head = "", body = "", sig = ""] = parts;
    try {
      const header = JSON.parse(Buffer.from(head, "base64url").toString("utf8")) as { alg?: unknown };
      if (header.alg !== this.alg.name) return undefined;
      const ok = verify(
        this.alg.hash,
        Buffer.from(`${head}.${body}`),
        this.verifyKey,
        Buffer.from(sig, "base64url"),
      );
      if (!ok) return undefined;
      const claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as unknown;
      return typeof claims === "object" && claims !== null ? (claims as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  /** A registry bearer token granting `access`, for `ttlS` seconds. */
  bearer(subject: string, access: RegistryAccess[], ttlS: number, now = Date.now()): string {
    const iat = Math.floor(now / 1000);
    return this.signJwt({
      iss: TOKEN_ISSUER,
      sub: subject,
      aud: this.service,
      iat,
      nbf: iat,
      exp: iat + ttlS,
      jti: randomUUID(),
      access,
    });
  }

  /** A push token: the password that the token endpoint exchanges for bearers on one repository. */
  pushToken(
    grant: Omit<PushGrant, "expiresAt">,
    ttlS: number,
    now = Date.now(),
  ): { token: string; expiresAt: Date } {
    const iat = Math.floor(now / 1000);
    const exp = iat + ttlS;
    const token = this.signJwt({
      iss: TOKEN_ISSUER,
      sub: grant.subject,
      aud: PUSH_AUDIENCE,
      iat,
      exp,
      jti: randomUUID(),
      ws: grant.workspaceId,
      dep: grant.deploymentId,
      repository: grant.repository,
      actions: grant.actions,
    });
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** What a push token grants, or undefined when it is not one of ours or has expired. */
  readPushToken(token: string, now = Date.now()): PushGrant | undefined {
    const c = this.readJwt(token);
    if (!c || c.iss !== TOKEN_ISSUER || c.aud !== PUSH_AUDIENCE) return undefined;
    if (typeof c.exp !== "number" || c.exp * 1000 <= now) return undefined;
    const { sub, ws, dep, repository } = c;
    if (typeof sub !== "string" || typeof ws !== "string" || typeof dep !== "string") return undefined;
    if (typeof repository !== "string" || !Array.isArray(c.actions)) return undefined;
    const actions = c.actions.filter((a): a is RegistryAction => a === "pull" || a === "push");
    return {
      subject: sub,
      workspaceId: ws,
      deploymentId: dep,
      repository,
      actions,
      expiresAt: new Date(c.exp * 1000),
    };
  }
}
