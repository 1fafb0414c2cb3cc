import type { Database } from "../../db/client.ts";
import type { FlowEnv } from "../oauth-tokens/env.ts";
import { type CallbackOutcome, handleCallback } from "./callback.ts";
import type { SetupQuery } from "./schema.ts";

/**
 * A code-host app's setup URL. When the installation also asked the user to authorize (code or
 * error with a state), the flow that state names is finished exactly as by the callback; an
 * unknown state changes nothing. Anything else (an update of the installation, a bare visit)
 * needs no exchange: the page says so and nothing is stored or echoed back.
 */
export async function setupLanding(
  db: Database,
  env: FlowEnv,
  slug: string,
  q: SetupQuery,
): Promise<CallbackOutcome> {
  if (q.state && (q.code !== undefined || q.error !== undefined)) {
    const params = new URLSearchParams({ state: q.state });
    for (const key of ["code", "error", "error_description"] as const) {
      const value = q[key];
      if (value !== undefined) params.set(key, value);
    }
    return handleCallback(db, env, slug, params);
  }
  const updated = q.setup_action === "update";
  return {
    refusal: null,
    ok: true,
    title: updated ? "Installation updated" : "Setup received",
    message: "Nothing more is needed here. You can close this window and return to the application.",
    flowId: null,
  };
}
