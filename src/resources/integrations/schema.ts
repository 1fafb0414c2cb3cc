import { type Static, Type } from "@sinclair/typebox";
import { DateTime, DisplayName, Nullable, Uuid } from "../../http/schemas.ts";

export const IntegrationKind = Type.Union([Type.Literal("local_git"), Type.Literal("github")]);

export const Integration = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  kind: IntegrationKind,
  name: Type.String(),
  path: Nullable(Type.String({ description: "local_git: the directory whose repositories are listed." })),
  installation_id: Nullable(Type.Integer({ description: "github: the GitHub App installation." })),
  created_at: DateTime,
});
export type Integration = Static<typeof Integration>;

export const CreateIntegrationBody = Type.Object({
  kind: IntegrationKind,
  path: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description: "local_git: an absolute directory under one of SLIPWAY_LOCAL_GIT_ROOTS.",
    }),
  ),
  installation_id: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "github: the id of an installation of the server's GitHub App.",
    }),
  ),
  name: Type.Optional(
    Type.Union([DisplayName, Type.Null()], {
      description: "Defaults to the directory's name or the installation's account.",
    }),
  ),
});
export type CreateIntegrationBody = Static<typeof CreateIntegrationBody>;

export const IntegrationParams = Type.Object({ integration_id: Uuid });

/** The interface's code-host repository record, exactly. */
export const CodehostRepository = Type.Object(
  {
    host_integration_id: Type.String({
      format: "uuid",
      description: "Use as `integration_id` in the POST /v2/deployments body.",
    }),
    id: Type.Integer(),
    name: Type.String(),
    owner: Type.String(),
    url: Type.String({ description: "Use as `source_config.repo_url` in the POST /v2/deployments body." }),
    default_branch: Type.String({
      description: "Use as `source_revision_config.repo_ref` in the POST /v2/deployments body.",
    }),
  },
  { additionalProperties: false },
);
