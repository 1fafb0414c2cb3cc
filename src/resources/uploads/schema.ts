import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Uuid } from "../../core/shapes.ts";

export const UploadUrl = Type.Object({
  upload_url: Type.String({
    description:
      "PUT the .tar.gz here (Content-Type application/gzip), once, before `expires_at`; no API key.",
  }),
  source_tarball_path: Type.String({
    description: "After the PUT, send as `source_revision_config.source_tarball_path` in a PATCH.",
  }),
  object_path: Type.String({
    description: "The same value as `source_tarball_path` (the name the hosted service's CLI reads).",
  }),
  expires_at: DateTime,
});
export type UploadUrl = Static<typeof UploadUrl>;

export const UploadReceipt = Type.Object({
  source_tarball_path: Type.String(),
  size_bytes: Type.Integer(),
  completed_at: DateTime,
});
export type UploadReceipt = Static<typeof UploadReceipt>;

export const UploadParams = Type.Object({ upload_id: Uuid });
export const UploadQuery = Type.Object({ token: Type.Optional(Type.String({ maxLength: 200 })) });
