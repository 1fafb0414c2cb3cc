import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { imageTag, imageVersion, qualifiedImage } from "../../../src/runtimes/build/image.ts";
import { CONTAINERS_CONF } from "../../../src/runtimes/engine/finder.ts";

/** The pure parts of image revisions; the engine itself is exercised in local/containers/container.test.ts. */
describe("container image references", () => {
  it("take the tag as written, and spell out Docker Hub's short names", () => {
    assert.equal(imageTag("reg.example:5000/team/app:1.2@sha256:abc"), "1.2");
    assert.equal(imageTag("reg.example:5000/team/app"), undefined);
    assert.equal(imageTag("app@sha256:abc"), undefined);
    assert.equal(imageTag("nginx:latest"), "latest");
    assert.equal(qualifiedImage("nginx:1"), "docker.io/library/nginx:1");
    assert.equal(qualifiedImage("team/app:1"), "docker.io/team/app:1");
    assert.equal(qualifiedImage("localhost/app:1"), "localhost/app:1");
    assert.equal(qualifiedImage("reg.example:5000/app"), "reg.example:5000/app");
    assert.equal(qualifiedImage("ghcr.io/o/app:2"), "ghcr.io/o/app:2");
  });

  it("image_version: the version label, else the tag, else null", () => {
    const labelled = { id: "x", labels: { "org.opencontainers.image.version": "3.1.4" } };
    assert.equal(imageVersion("app:9", labelled), "3.1.4");
    assert.equal(imageVersion("app:9", { id: "x", labels: {} }), "9");
    assert.equal(imageVersion("app@sha256:abc", { id: "x", labels: {} }), null);
  });

  it("Slipway's containers.conf selects runc and sets both ulimits", () => {
    assert.match(CONTAINERS_CONF, /^runtime = "runc"$/m);
    assert.match(CONTAINERS_CONF, /^default_ulimits = \["nofile=1024:1024", "nproc=1024:1024"\]$/m);
  });
});
