import { deploymentEnvelopes } from "../core/deployments/runtime-store.ts";
import { revisionEnvelopes } from "../core/revisions/secrets-store.ts";
import type { EnvelopeColumn } from "../crypto/rotate.ts";
import type { Executor } from "../db/client.ts";
import { certificateEnvelopes } from "./certificates/store.ts";
import { integrationEnvelopes } from "./integrations/store.ts";
import { flowEnvelopes } from "./oauth-flows/store.ts";
import { providerEnvelopes } from "./oauth-providers/store.ts";
import { tokenEnvelopes } from "./oauth-tokens/store.ts";
import { webhookEnvelopes } from "./webhooks/store.ts";

/**
 * Every column that stores envelopes, each declared by its table's store: what `slipway keys
 * rotate` re-encrypts. A store that adds an encrypted column lists it in its own `…Envelopes`.
 */
export const envelopeColumns = (exec: Executor): EnvelopeColumn[] => [
  ...revisionEnvelopes(exec),
  ...deploymentEnvelopes(exec),
  ...providerEnvelopes(exec),
  ...tokenEnvelopes(exec),
  ...flowEnvelopes(exec),
  ...webhookEnvelopes(exec),
  ...integrationEnvelopes(exec),
  ...certificateEnvelopes(exec),
];
