import { type Static, Type } from "@sinclair/typebox";
import { DateTime, DisplayName, Uuid } from "../../core/shapes.ts";

export const TagKey = Type.Object({ id: Uuid, key: Type.String(), created_at: DateTime });
export type TagKey = Static<typeof TagKey>;

export const TagValue = Type.Object({
  id: Uuid,
  tag_key_id: Uuid,
  value: Type.String(),
  created_at: DateTime,
});
export type TagValue = Static<typeof TagValue>;

/** A deployment's tag: the value with its key, so a listing reads as `key: value`. */
export const DeploymentTag = Type.Object({
  deployment_id: Uuid,
  tag_value_id: Uuid,
  tag_key_id: Uuid,
  key: Type.String(),
  value: Type.String(),
  created_at: DateTime,
});
export type DeploymentTag = Static<typeof DeploymentTag>;

export const CreateTagKeyBody = Type.Object({ key: DisplayName }, { additionalProperties: false });
export const CreateTagValueBody = Type.Object({ value: DisplayName }, { additionalProperties: false });
export const CreateDeploymentTagBody = Type.Object({ tag_value_id: Uuid }, { additionalProperties: false });

export const TagKeyParams = Type.Object({ key_id: Uuid });
export const TagValueParams = Type.Object({ key_id: Uuid, value_id: Uuid });
export const DeploymentTagParams = Type.Object({ deployment_id: Uuid, tag_value_id: Uuid });
