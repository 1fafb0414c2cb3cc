import { type Static, Type } from "@sinclair/typebox";

/** The words of the deployment domain that every layer above shares. */

export const SOURCES = [
  "codehost",
  "external_docker",
  "internal_docker",
  "internal_source",
  "internal_template",
] as const;
export type Source = (typeof SOURCES)[number];
export const REVISION_SOURCES = ["codehost", "internal_docker", "internal_source"] as const;
export const DEPLOYMENT_TYPES = ["dev_free", "dev", "prod"] as const;
export type DeploymentType = (typeof DEPLOYMENT_TYPES)[number];

/** What a secret's value reads as everywhere it is shown. */
export const MASK = "********";

/** Unknown keys are dropped (not stored, not an error): Ajv's removeAdditional acts on these. */
const closed = { additionalProperties: false } as const;

export const Secret = Type.Object(
  { name: Type.String({ maxLength: 255 }), value: Type.String({ maxLength: 65536 }) },
  closed,
);
export type Secret = Static<typeof Secret>;

export const SecretReference = Type.Object(
  {
    name: Type.String({ maxLength: 255 }),
    secret_name: Type.String({ maxLength: 253 }),
    secret_key: Type.String({ maxLength: 253 }),
  },
  closed,
);
export type SecretReference = Static<typeof SecretReference>;
