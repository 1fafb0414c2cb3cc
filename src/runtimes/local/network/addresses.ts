import { mkdir, open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * The /30 of each namespace in 198.18.0.0/15 (firewall.ts NAMESPACE_RANGE): index i is
 * 198.18.0.0 + 4i; the host end is .1, the namespace .2. An index is held by a file
 * `<dir>/<i>` (created exclusively, naming the namespace), so two Slipway processes on one
 * machine never hand one out twice; a file whose namespace is gone is taken over.
 */
export const SLOTS = 32_768;
const BASE = (198 << 24) | (18 << 16);

function dotted(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

export function addressesOf(index: number): { host: string; namespace: string } {
  const net = BASE + index * 4;
  return { host: dotted(net + 1), namespace: dotted(net + 2) };
}

export class AddressSlots {
  constructor(
    private readonly dir: string,
    /** Whether a namespace of this name exists (a slot naming one that does not is free). */
    private readonly exists: (name: string) => boolean,
  ) {}

  /** The slot of `name`, from `hint` on: its own if it holds one, else the first free one. */
  async take(name: string, hint: number): Promise<number> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (let k = 0; k < SLOTS; k++) {
      const i = (hint + k) % SLOTS;
      const file = join(this.dir, String(i));
      const holder = await readFile(file, "utf8").catch(() => undefined);
      if (holder === name) return i;
      if (holder !== undefined) {
        // "" is a slot being written by its taker right now.
        if (holder === "" || this.exists(holder)) continue;
        await rm(file, { force: true });
      }
      try {
        const handle = await open(file, "wx", 0o600);
        await handle.writeFile(name);
        await handle.close();
        return i;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    }
    throw new Error("no free network namespace address is left");
  }

  async release(index: number, name: string): Promise<void> {
    const file = join(this.dir, String(index));
    if ((await readFile(file, "utf8").catch(() => undefined)) === name) await rm(file, { force: true });
  }
}
