import { randomBytes, randomUUID, webcrypto } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { encryptionContext, type Keyring } from "../../crypto/envelope.ts";
import type { Database } from "../../db/client.ts";
import type { Issuer } from "./issuer.ts";
import { authority, insertAuthority } from "./store.ts";

/**
 * SLIPWAY_APPS_TLS=internal: Slipway's own CA, like Caddy's `tls internal`. The root (ECDSA P-256,
 * ten years) is made by the first server that needs it and stored with its key encrypted, so every
 * server signs with the same root; each writes it to `<data dir>/tls/root.crt` for clients to trust.
 */

const ROOT_NAME = "internal";
const ALGORITHM = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGNING = { name: "ECDSA", hash: "SHA-256" } as const;
const DAY_MS = 86_400_000;
/** Leaf certificates are short-lived (renewed at two thirds, like any other). */
const LEAF_LIFE_MS = 7 * DAY_MS;
/** Clocks of clients a little behind ours still accept a fresh certificate. */
const BACKDATE_MS = 5 * 60_000;

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const rootContext = (id: string) => encryptionContext("tls_authorities", "key_enc", id);

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString("base64").replace(/.{64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith("\n") ? "" : "\n"}-----END ${label}-----\n`;
}

function derOf(pemText: string): ArrayBuffer {
  const body = pemText.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  const buf = Buffer.from(body, "base64");
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
}

const serial = () => {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f; // positive, as X.509 wants
  return bytes.toString("hex");
};

async function makeRoot(): Promise<{ certPem: string; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: "CN=Slipway Internal Root CA, O=Slipway",
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + 3650 * DAY_MS),
    keys,
    signingAlgorithm: SIGNING,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
  return { certPem: cert.toString("pem"), keyPem: pem("PRIVATE KEY", pkcs8) };
}

interface Root {
  cert: x509.X509Certificate;
  certPem: string;
  key: webcrypto.CryptoKey;
}

export class InternalIssuer implements Issuer {
  readonly source = "internal" as const;
  private root: Promise<Root> | undefined;

  constructor(
    private readonly db: Pick<Database, "orm">,
    private readonly keyring: Keyring,
    private readonly dataDir: string,
  ) {}

  /** Where the root certificate is written (docs/https.md). */
  get rootPath(): string {
    return join(this.dataDir, "tls", "root.crt");
  }

  /** Loads (or makes and stores) the root, and writes its certificate to `rootPath`. */
  start(): Promise<Root> {
    if (this.root !== undefined) return this.root;
    const loading = this.loadRoot();
    this.root = loading;
    loading.catch(() => {
      if (this.root === loading) this.root = undefined;
    });
    return loading;
  }

  private async loadRoot(): Promise<Root> {
    let row = await authority(this.db.orm, ROOT_NAME);
    if (row === undefined) {
      const made = await makeRoot();
      const id = randomUUID();
      await insertAuthority(this.db.orm, {
        id,
        name: ROOT_NAME,
        certPem: made.certPem,
        keyEnc: this.keyring.encrypt(made.keyPem, rootContext(id)),
      });
      // Another server may have stored its root first: everyone signs with the stored one.
      row = await authority(this.db.orm, ROOT_NAME);
      if (row === undefined) throw new Error("the internal CA was not stored");
    }
    const keyPem = this.keyring.decrypt(row.key_enc, rootContext(row.id));
    const key = await webcrypto.subtle.importKey("pkcs8", derOf(keyPem), ALGORITHM, false, ["sign"]);
    await mkdir(join(this.dataDir, "tls"), { recursive: true });
    await writeFile(this.rootPath, row.cert_pem);
    return { cert: new x509.X509Certificate(row.cert_pem), certPem: row.cert_pem, key };
  }

  async issue(hostname: string): Promise<{ certPem: string; keyPem: string }> {
    const root = await this.start();
    const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${hostname}`,
      issuer: root.cert.subject,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + LEAF_LIFE_MS),
      publicKey: keys.publicKey,
      signingKey: root.key,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: "dns", value: hostname }]),
        await x509.AuthorityKeyIdentifierExtension.create(root.cert.publicKey),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
    return { certPem: `${cert.toString("pem")}\n${root.certPem}`, keyPem: pem("PRIVATE KEY", pkcs8) };
  }
}
