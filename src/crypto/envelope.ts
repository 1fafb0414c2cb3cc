import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/**
 * Envelope encryption: each value gets its own random data key (AES-256-GCM), and the data key is
 * wrapped by the master key (AES-256-GCM too). The stored string names the master key's id, so
 * rotation only has to find values whose id is not the active one.
 *
 * Format: `sw1.<kid>.<wrapped data key>.<ciphertext>`, both parts base64url of nonce|ciphertext|tag.
 */
const VERSION = "sw1";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class DecryptionError extends Error {}

function seal(key: Buffer, plaintext: Buffer, aad: Buffer): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64url");
}

function open(key: Buffer, sealed: string, aad: Buffer): Buffer {
  const raw = Buffer.from(sealed, "base64url");
  if (raw.length < NONCE_BYTES + TAG_BYTES) throw new DecryptionError("ciphertext too short");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, NONCE_BYTES));
  decipher.setAAD(aad);
  decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
  try {
    return Buffer.concat([
      decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)),
      decipher.final(),
    ]);
  } catch {
    throw new DecryptionError("ciphertext failed authentication");
  }
}

/** A short, stable id of a master key (not secret: a hash prefix). */
export function keyId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 12);
}

/**
 * Where a value is stored, bound into its envelope as associated data, so a ciphertext copied to
 * another row or column does not decrypt. Each table's key column is `id`.
 */
export function encryptionContext(table: string, column: string, id: string): string {
  return `${table}.${column}:${id}`;
}

export class Keyring {
  readonly activeKid: string;
  private readonly keys = new Map<string, Buffer>();

  /** `active` encrypts; `previous` only decrypt (values written before a rotation). */
  constructor(active: Buffer, previous: Buffer[] = []) {
    for (const k of [active, ...previous]) {
      if (k.length !== 32) throw new Error("master keys are 32 bytes");
      this.keys.set(keyId(k), k);
    }
    this.activeKid = keyId(active);
  }

  static fromBase64(active: string, previous: string[] = []): Keyring {
    return new Keyring(
      Buffer.from(active, "base64"),
      previous.map((p) => Buffer.from(p, "base64")),
    );
  }

  /** `context` binds the ciphertext to where it is stored (table, column, row id). */
  encrypt(plaintext: string, context: string): string {
    const active = this.keys.get(this.activeKid) as Buffer;
    const dataKey = randomBytes(32);
    const aad = Buffer.from(context, "utf8");
    const wrapped = seal(active, dataKey, Buffer.from(`${VERSION}.${this.activeKid}.${context}`, "utf8"));
    return `${VERSION}.${this.activeKid}.${wrapped}.${seal(dataKey, Buffer.from(plaintext, "utf8"), aad)}`;
  }

  decrypt(envelope: string, context: string): string {
    const parts = envelope.split(".");
    if (parts.length !== 4 || parts[0] !== VERSION) throw new DecryptionError("not a Slipway envelope");
    const [, kid, wrapped, body] = parts as [string, string, string, string];
    const master = this.keys.get(kid);
    if (!master) throw new DecryptionError(`master key ${kid} is not configured`);
    const dataKey = open(master, wrapped, Buffer.from(`${VERSION}.${kid}.${context}`, "utf8"));
    return open(dataKey, body, Buffer.from(context, "utf8")).toString("utf8");
  }

  /** How every envelope under the active key begins (rotation skips those). */
  get activePrefix(): string {
    return `${VERSION}.${this.activeKid}.`;
  }

  kidOf(envelope: string): string | undefined {
    const parts = envelope.split(".");
    return parts.length === 4 && parts[0] === VERSION ? parts[1] : undefined;
  }

  /** Re-wraps a value under the active key; the plaintext never leaves this function. */
  reencrypt(envelope: string, context: string): string {
    return this.encrypt(this.decrypt(envelope, context), context);
  }
}
