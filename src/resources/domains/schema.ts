import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, StringEnum, Uuid } from "../../core/shapes.ts";

/**
 * A custom domain as the API answers it (docs/domains.md). Verification: `pending` until the TXT
 * record `record_name` holds `token` (`reason`: why the last check failed), then `verified`.
 * Certificate (docs/https.md): `none` while certificates are not managed (SLIPWAY_APPS_TLS off or
 * files) or the domain is unverified; then `pending` until the first is issued, `issued` (with
 * `expires_at`; `reason` tells of a failed renewal), or `failed` (`reason`; retried with back-off).
 */
export const Domain = Type.Object({
  id: Uuid,
  hostname: Type.String(),
  verification: Type.Object({
    status: StringEnum(["pending", "verified"]),
    record_name: Type.String(),
    token: Type.String(),
    reason: Nullable(Type.String()),
  }),
  certificate: Type.Object({
    status: StringEnum(["none", "pending", "issued", "failed"]),
    expires_at: Nullable(DateTime),
    reason: Nullable(Type.String()),
  }),
});
export type Domain = Static<typeof Domain>;

export const CreateDomainBody = Type.Object(
  { hostname: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
);

export const DomainParams = Type.Object({ deployment_id: Uuid, domain_id: Uuid });
