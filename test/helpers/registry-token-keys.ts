import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TokenKeys {
  dir: string;
  keyFile: string;
  certFile: string;
  keyPem: string;
  certPem: string;
}

/**
 * A registry token key and its self-signed certificate, made by the real openssl as docs/registry.md
 * tells operators to (`ec`: P-256 for ES256, `rsa`: RS256). The registry's rootcertbundle is the cert.
 */
export function makeTokenKeys(kind: "ec" | "rsa" = "ec"): TokenKeys {
  const dir = mkdtempSync(join(tmpdir(), "slipway-token-keys-"));
  const keyFile = join(dir, "token.key");
  const certFile = join(dir, "token.crt");
  const keyArgs =
    kind === "ec" ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"] : ["-newkey", "rsa:2048"];
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      ...keyArgs,
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "30",
      "-subj",
      "/CN=slipway-registry-token",
    ],
    { stdio: "ignore" },
  );
  return {
    dir,
    keyFile,
    certFile,
    keyPem: readFileSync(keyFile, "utf8"),
    certPem: readFileSync(certFile, "utf8"),
  };
}

/** The env that makes a Slipway server the registry's token server with these keys. */
export function tokenEnv(keys: TokenKeys, registryUrl: string): Record<string, string> {
  return {
    SLIPWAY_REGISTRY_URL: registryUrl,
    SLIPWAY_REGISTRY_TOKEN_KEY_FILE: keys.keyFile,
    SLIPWAY_REGISTRY_TOKEN_CERT_FILE: keys.certFile,
  };
}

/** The claims of a JWT, unverified (tests check the signature separately). */
export function jwtParts(token: string): {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
} {
  const [h = "", c = ""] = token.split(".");
  return {
    header: JSON.parse(Buffer.from(h, "base64url").toString("utf8")) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as Record<string, unknown>,
  };
}
