import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { imageRepository, repositoryPath, splitImageRef } from "../../../src/runtimes/remote/image-ref.ts";

describe("image references", () => {
  it("split into repository and tag: a registry port is not a tag, a digest has none", () => {
    assert.deepEqual(splitImageRef("reg.example:5000/ws/app:rev1"), {
      repository: "reg.example:5000/ws/app",
      tag: "rev1",
    });
    assert.deepEqual(splitImageRef("reg.example:5000/ws/app"), {
      repository: "reg.example:5000/ws/app",
      tag: undefined,
    });
    assert.deepEqual(splitImageRef("nginx:1.27@sha256:abc"), { repository: "nginx", tag: "1.27" });
    assert.deepEqual(splitImageRef(`reg/app@sha256:${"a".repeat(64)}`), {
      repository: "reg/app",
      tag: undefined,
    });
  });

  it("a built image's repository, and its path inside a registry with a path", () => {
    const repo = imageRepository("reg.example:5000/team", "ws1", "shop");
    assert.equal(repo, "reg.example:5000/team/ws1/shop");
    assert.equal(repositoryPath("reg.example:5000/team", repo), "team/ws1/shop");
  });
});
