// The Kubernetes shapes inside a ResourceSpec (volumes, mounts, containers), as the API accepts
// them: each copied field by field by the listener, unknown keys dropped by the API.
import { Type } from "@sinclair/typebox";

/** Unknown keys are dropped (not stored, not an error): Ajv's removeAdditional acts on these. */
export const closed = { additionalProperties: false } as const;
const FreeForm = Type.Object({}, { additionalProperties: true });

export const VolumeMount = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    mountPath: Type.String({ minLength: 1 }),
    subPath: Type.Optional(Type.String()),
    mountPropagation: Type.Optional(Type.String()),
    subPathExpr: Type.Optional(Type.String()),
    readOnly: Type.Optional(Type.Boolean()),
  },
  closed,
);

export const Volume = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    configMap: Type.Optional(FreeForm),
    secret: Type.Optional(FreeForm),
    emptyDir: Type.Optional(FreeForm),
    persistentVolumeClaim: Type.Optional(FreeForm),
    nfs: Type.Optional(FreeForm),
    projected: Type.Optional(FreeForm),
    downwardAPI: Type.Optional(FreeForm),
    csi: Type.Optional(FreeForm),
  },
  closed,
);

export const Container = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    image: Type.Optional(Type.String()),
    imagePullPolicy: Type.Optional(Type.String()),
    workingDir: Type.Optional(Type.String()),
    restartPolicy: Type.Optional(Type.String()),
    command: Type.Optional(Type.Array(Type.String())),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1 }),
            value: Type.Optional(Type.String()),
            valueFrom: Type.Optional(FreeForm),
          },
          closed,
        ),
      ),
    ),
    envFrom: Type.Optional(Type.Array(FreeForm)),
    resources: Type.Optional(
      Type.Object({ limits: Type.Optional(FreeForm), requests: Type.Optional(FreeForm) }, closed),
    ),
    volumeMounts: Type.Optional(Type.Array(VolumeMount)),
    securityContext: Type.Optional(FreeForm),
  },
  closed,
);

export const PullSecret = Type.Object({ name: Type.String({ minLength: 1 }) }, closed);
