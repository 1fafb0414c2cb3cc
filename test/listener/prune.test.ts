// What pruning deletes: the database's volume stays while its StatefulSet is wanted, and its
// Secret goes only with (after) the volume.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { objectKey } from "../../src/listener/applier.ts";
import { manifestsFor } from "../../src/listener/manifests/index.ts";
import type { K8sObject } from "../../src/listener/manifests/types.ts";
import { prunable } from "../../src/listener/prune.ts";
import { desired, manifestOptions } from "../helpers/listener-fixtures.ts";

const PASSWORDS = { database: "db" };
const objects = manifestsFor(desired({ resource_spec: { db_storage_gi: 1 } }), manifestOptions(), PASSWORDS);
const sts = objects.find((o) => o.kind === "StatefulSet") as K8sObject;
const claimTemplate = ((
  sts.spec as { volumeClaimTemplates: { metadata: { labels: Record<string, string> } }[] }
).volumeClaimTemplates[0]?.metadata.labels ?? {}) as Record<string, string>;
/** The PVC the StatefulSet controller makes from the claim template (its labels). */
const pvc: K8sObject = {
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name: `data-${sts.metadata.name}-0`, namespace: "team-a", labels: claimTemplate },
};
const live = [...objects, pvc];
const keys = (xs: K8sObject[]) => xs.map((o) => `${o.kind}/${o.metadata.name}`).sort();

describe("prunable", () => {
  it("everything wanted: nothing goes, the controller-made volume included", () => {
    const keep = new Map(objects.map((o) => [objectKey(o), o]));
    assert.deepEqual(prunable(live, keep), { now: [], secrets: [] });
  });

  it("the database no longer wanted: its objects and volume now, its Secret held for after the volume", () => {
    const withoutDb = manifestsFor(desired(), manifestOptions());
    const keep = new Map(withoutDb.map((o) => [objectKey(o), o]));
    const { now, secrets } = prunable(live, keep);
    assert.deepEqual(
      keys(now),
      keys([
        sts,
        pvc,
        objects.find((o) => o.kind === "Service" && o.metadata.name.endsWith("-db")) as K8sObject,
      ]),
    );
    assert.deepEqual(keys(secrets), ["Secret/shop-5f1e2d3c-db"]);
  });

  it("the deployment gone: all of it", () => {
    const { now, secrets } = prunable(live, new Map());
    assert.equal(now.length + secrets.length, live.length);
  });
});
