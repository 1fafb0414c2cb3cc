import { type Static, Type } from "@sinclair/typebox";
import { DateTime, DisplayName, Uuid } from "../../core/shapes.ts";

export const Workspace = Type.Object({
  id: Uuid,
  name: Type.String(),
  organization_id: Uuid,
  created_at: DateTime,
});
export type Workspace = Static<typeof Workspace>;

export const CreateWorkspaceBody = Type.Object({ name: DisplayName });
