import { type Static, Type } from "@sinclair/typebox";
import { DateTime, DisplayName, Nullable, Uuid } from "../../core/shapes.ts";
import { ApiKeyCreated } from "../api-keys/schema.ts";

export const Organization = Type.Object({
  id: Uuid,
  name: Type.String(),
  created_at: DateTime,
  default_workspace_id: Nullable(Uuid),
});
export type Organization = Static<typeof Organization>;

export const OrganizationCreated = Type.Composite([Organization, Type.Object({ api_key: ApiKeyCreated })]);
export type OrganizationCreated = Static<typeof OrganizationCreated>;

export const CreateOrganizationBody = Type.Object({ name: DisplayName });
