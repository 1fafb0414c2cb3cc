// The database's and cache's passwords: read back from their Secrets (the data was made with
// them), generated the first time, and remembered.
import { randomBytes } from "node:crypto";
import type { DesiredDeployment } from "../protocol/listener.ts";
import type { Cluster } from "./cluster.ts";
import { names, type Passwords, partsOf } from "./manifests/index.ts";

export class PasswordKeeper {
  private readonly known = new Map<string, string>();

  constructor(private readonly cluster: Cluster) {}

  async for(d: DesiredDeployment): Promise<Passwords> {
    const parts = partsOf(d);
    const n = names(d);
    const out: Passwords = {};
    for (const [part, name] of [
      ["database", n.database],
      ["cache", n.cache],
    ] as const) {
      if (!parts[part]) continue;
      const key = `${d.namespace}/${name}`;
      let password = this.known.get(key);
      if (!password) {
        const secret = await this.cluster.read("v1", "Secret", d.namespace, name);
        const data = (secret?.data ?? {}) as Record<string, string>;
        password = data.password
          ? Buffer.from(data.password, "base64").toString("utf8")
          : randomBytes(24).toString("base64url");
        this.known.set(key, password);
      }
      out[part] = password;
    }
    return out;
  }
}
