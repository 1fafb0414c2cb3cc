import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { REDACTED, redactor } from "../../src/reconciler/redact.ts";

const SECRET = "s3cr3t-Value_42";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const b64url = (s: string) => Buffer.from(s).toString("base64url");

function assertHidden(line: string, shown: string): void {
  const out = redactor([SECRET])(line);
  assert.ok(out.includes(REDACTED), `redacted: ${line} → ${out}`);
  assert.ok(!out.includes(shown), `${shown} hidden in ${out}`);
}

describe("log redaction of secret values", () => {
  it("hides the value as it is, URL-encoded, and in any letter case", () => {
    assertHidden(`token=${SECRET}`, SECRET);
    assertHidden(`TOKEN=${SECRET.toUpperCase()}`, SECRET.toUpperCase());
    assertHidden(`token=${SECRET.toLowerCase()}`, SECRET.toLowerCase());
    const withSpace = "pass word/x";
    const out = redactor([withSpace])(`postgres://u:${encodeURIComponent(withSpace)}@db/x`);
    assert.equal(out, `postgres://u:${REDACTED}@db/x`);
  });

  it("hides its base64 and base64url forms, alone and inside a longer encoded text", () => {
    assertHidden(`secret is ${b64(SECRET)}`, b64(SECRET).slice(0, 12));
    assertHidden(`secret is ${b64url(`${SECRET}??>>`)}`, b64url(SECRET).slice(0, 12));
    // A Basic auth header: the value sits after "user:", at every byte offset of base64's groups.
    for (const user of ["u", "us", "use", "user"]) {
      const header = `Authorization: Basic ${b64(`${user}:${SECRET}`)}`;
      const out = redactor([SECRET])(header);
      assert.ok(out.includes(REDACTED), `hidden after ${user}: ${out}`);
      // What is left of the encoded text cannot give the value back.
      const left = out.slice("Authorization: Basic ".length).split(REDACTED).join("");
      assert.ok(!Buffer.from(left, "base64").toString("latin1").includes(SECRET.slice(2, -2)));
    }
    for (const prefix of ['{"k":"', '{"ke":"', '{"key":"']) {
      assertHidden(b64(`${prefix}${SECRET}"}`), b64(SECRET).slice(4, 12));
    }
  });

  it("leaves other text alone, and a line with no secret as it is", () => {
    const r = redactor([SECRET]);
    assert.equal(r("listening on :3000"), "listening on :3000");
    assert.equal(r(b64("nothing to see here, really")), b64("nothing to see here, really"));
    assert.equal(redactor([])("anything"), "anything");
    assert.equal(redactor([""])("anything"), "anything");
  });

  it("hides a secret that contains another whole", () => {
    assert.equal(redactor(["abc", "xxabcxx"])("v=xxabcxx"), `v=${REDACTED}`);
    assert.equal(redactor(["a.c"])("abc a.c"), `abc ${REDACTED}`, "values are matched literally");
  });
});
