import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, Uuid } from "../../core/shapes.ts";

export const RoleSchema = Type.Union([
  Type.Literal("admin"),
  Type.Literal("member"),
  Type.Literal("viewer"),
  Type.Literal("listener"),
]);

export const ApiKey = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  workspace_id: Nullable(Uuid),
  role: RoleSchema,
  listener_id: Nullable(Uuid),
  is_system: Type.Boolean(),
  description: Type.String(),
  prefix: Type.String({ description: "The first characters of the key, to tell keys apart." }),
  created_at: DateTime,
  revoked_at: Nullable(DateTime),
});
export type ApiKey = Static<typeof ApiKey>;

export const ApiKeyCreated = Type.Composite([
  ApiKey,
  Type.Object({
    key: Type.String({ description: "The key itself: shown this once, stored only as a hash." }),
  }),
]);
export type ApiKeyCreated = Static<typeof ApiKeyCreated>;

export const CreateApiKeyBody = Type.Object({
  description: Type.Optional(Type.String({ maxLength: 200 })),
  role: RoleSchema,
  workspace_id: Type.Optional(Nullable(Uuid)),
  listener_id: Type.Optional(
    Nullable(
      Type.String({
        format: "uuid",
        description:
          "With role listener (and only then): the listener the key acts for. Such a key reads that " +
          "listener's desired state and reports its status; every other route answers 403.",
      }),
    ),
  ),
});
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;
