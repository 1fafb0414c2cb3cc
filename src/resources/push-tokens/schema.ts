import { type Static, Type } from "@sinclair/typebox";
import { Uuid } from "../../http/schemas.ts";

export const PushTokenParams = Type.Object({ deployment_id: Uuid });

export const PushToken = Type.Object({
  token: Type.Union([Type.String(), Type.Null()], {
    description:
      "The password to log in with (`podman login --password-stdin`), or null when the registry takes pushes without credentials. " +
      "It is the registry credential this server was configured with (SLIPWAY_REGISTRY_PASSWORD): Slipway cannot scope it to the repository or make it expire, because the registry checks it itself.",
  }),
  username: Type.Union([Type.String(), Type.Null()], {
    description: "The user name to log in with, or null when no login is needed.",
  }),
  registry_url: Type.String({
    description: "The registry (host[:port][/path]), as `podman login` takes it.",
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
