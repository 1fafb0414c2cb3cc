import { BOOTSTRAP_LOCK } from "./db/channels.ts";
import type { Database } from "./db/client.ts";
import { hashApiKey } from "./resources/api-keys/key-material.ts";
import { insertApiKey } from "./resources/api-keys/service.ts";
import { apiKeyExists } from "./resources/api-keys/store.ts";
import { createOrganization } from "./resources/organizations/service.ts";
import { firstOrganization, organizationNamed } from "./resources/organizations/store.ts";

export interface BootstrapResult {
  /** The key value when this start generated it (print it once); undefined otherwise. */
  generatedKey?: string;
  createdOrganization: boolean;
}

/**
 * First start on an empty database: organization `default`, workspace `default` and a system
 * admin key. With SLIPWAY_BOOTSTRAP_API_KEY the key is that value, and later starts make sure it
 * exists (so an operator can set it on an existing install) without creating anything twice.
 */
export async function bootstrap(db: Database, bootstrapKey: string | undefined): Promise<BootstrapResult> {
  return db.withAdvisoryLock(BOOTSTRAP_LOCK, async () => {
    const orm = db.orm;
    const first = await firstOrganization(orm);
    if (!first) {
      const org = await createOrganization(orm, { name: "default", key: bootstrapKey, isSystem: true });
      return { createdOrganization: true, generatedKey: bootstrapKey ? undefined : org.api_key.key };
    }
    if (bootstrapKey) {
      if (!(await apiKeyExists(orm, hashApiKey(bootstrapKey)))) {
        const named = await organizationNamed(orm, "default");
        await insertApiKey(orm, {
          organizationId: (named ?? first).id,
          role: "admin",
          isSystem: true,
          description: "bootstrap system key",
          key: bootstrapKey,
        });
      }
    }
    return { createdOrganization: false };
  });
}
