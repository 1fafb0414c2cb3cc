import { type Static, Type } from "@sinclair/typebox";
import { Uuid } from "../../core/shapes.ts";

export const PushTokenParams = Type.Object({ deployment_id: Uuid });

export const PushToken = Type.Object({
  token: Type.Union([Type.String(), Type.Null()], {
    description:
      "The password to log in with (`podman login --password-stdin`), or null when the registry takes pushes without credentials. " +
      "With registry token auth (SLIPWAY_REGISTRY_TOKEN_*) it is good for this deployment's repository alone, pull and push, until `expires_at`; " +
      "without it, it is the registry credential this server was configured with (SLIPWAY_REGISTRY_PASSWORD), which the registry checks itself.",
  }),
  username: Type.Union([Type.String(), Type.Null()], {
    description: "The user name to log in with, or null when no login is needed.",
  }),
  registry_url: Type.String({
    description:
      "The workspace's namespace in the registry (`host[:port][/path]/<workspace id>`): `<registry_url>/<deployment name>` " +
      "is `repository`, the one the token may push to. `podman login` takes it as it is.",
  }),
  repository: Type.String({
    description:
      "Where this deployment's images go: push `<repository>:<tag>` and send it as `source_revision_config.image_uri` of an internal_docker deployment.",
  }),
  expires_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description: "When the token stops working; null: it does not expire (the registry's own credential).",
  }),
});
export type PushToken = Static<typeof PushToken>;

export const RegistryTokenQuery = Type.Object({
  service: Type.Optional(
    Type.String({ maxLength: 256, description: "The registry's service name (its `auth.token.service`)." }),
  ),
  scope: Type.Optional(
    Type.Union(
      [Type.String({ maxLength: 1024 }), Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 16 })],
      {
        description: "What is asked, `repository:<name>:pull,push`; may be repeated.",
      },
    ),
  ),
  account: Type.Optional(Type.String({ maxLength: 256 })),
  client_id: Type.Optional(Type.String({ maxLength: 256 })),
  offline_token: Type.Optional(Type.String({ maxLength: 16 })),
});

export const RegistryBearer = Type.Object({
  token: Type.String({
    description: "A bearer for the registry, granting what was asked of the push token's repository only.",
  }),
  access_token: Type.String({ description: "The same token (OAuth 2 name)." }),
  expires_in: Type.Integer({ description: "Seconds until it expires." }),
  issued_at: Type.String({ format: "date-time" }),
});
export type RegistryBearer = Static<typeof RegistryBearer>;
