import { type Static, Type } from "@sinclair/typebox";
import { DateTime, DisplayName, Nullable, Uuid } from "../../core/shapes.ts";

export const IntegrationKind = Type.Union([Type.Literal("local_git"), Type.Literal("github")]);

export const Integration = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  kind: IntegrationKind,
  name: Type.String(),
  path: Nullable(Type.String({ description: "local_git: the directory whose repositories are listed." })),
  installation_id: Nullable(Type.Integer({ description: "github: the GitHub App installation." })),
  created_at: DateTime,
  has_webhook_secret: Type.Optional(
    Type.Boolean({
      description:
        'Whether push webhooks can be verified (docs/codehost.md, "Build on push"); false for integrations made before them until the secret is rotated.',
    }),
  ),
});
export type Integration = Static<typeof Integration>;

/** The create and rotate answers: the record and the push webhook secret, shown this once. */
export const IntegrationWithSecret = Type.Composite([
  Integration,
  Type.Object({
    webhook_secret: Type.Optional(
      Type.String({
        description:
          "The secret the code host signs push webhooks with (X-Hub-Signature-256). Shown once: store it now.",
      }),
    ),
  }),
]);
export type IntegrationWithSecret = Static<typeof IntegrationWithSecret>;

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

/** What a push did to one deployment that builds the pushed branch on push. */
export const PushOutcome = Type.Object({
  deployment_id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  revision_id: Nullable(Type.String({ format: "uuid", description: "The revision the push made." })),
  skipped: Nullable(
    Type.String({ description: "Why no revision was made (watch_paths, already at the commit, …)." }),
  ),
  note: Type.Optional(Type.String({ description: "A problem worth fixing that did not stop the build." })),
});
export type PushOutcome = Static<typeof PushOutcome>;

/** The answer to a code-host webhook delivery. */
export const WebhookAnswer = Type.Object({
  event: Type.String({ description: "X-GitHub-Event as received." }),
  delivery_id: Type.String(),
  /** Why nothing was looked at: a ping, another event, a tag, a deleted branch, a redelivery. */
  ignored: Nullable(Type.String()),
  ref: Type.Optional(Type.String()),
  after: Type.Optional(Type.String()),
  deployments: Type.Array(PushOutcome, {
    description:
      "Every deployment that builds the pushed repository and branch on push, and what happened to it.",
  }),
});
export type WebhookAnswer = Static<typeof WebhookAnswer>;
