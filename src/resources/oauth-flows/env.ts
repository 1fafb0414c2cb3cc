import type { Config } from "../../config.ts";

/** Flows must be completed within this time. */
export const FLOW_TTL_MS = 10 * 60 * 1000;

export function callbackUrl(config: Config, slug: string): string {
  return `${config.publicUrl}${config.basePath}/v2/auth/callback/${encodeURIComponent(slug)}`;
}
