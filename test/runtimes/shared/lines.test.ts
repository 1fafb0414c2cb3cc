import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { after, describe, it } from "node:test";
import { cutLine, forEachLine, MAX_LINE_BYTES } from "../../../src/runtimes/shared/lines.ts";
import { bwrapSkip } from "../../helpers/bwrap.ts";
import { cleanupTemp, newRuntime, phase, spec, tempDir, writeApp } from "../../helpers/local-runtime.ts";

const RANGE = { first: 328_500, last: 328_599 };
const skip = await bwrapSkip(RANGE);

/** The lines `forEachLine` makes of `chunks` written one after another. */
async function linesOf(chunks: (string | Buffer)[]): Promise<string[]> {
  const stream = new PassThrough();
  const lines: string[] = [];
  forEachLine(stream, (l) => lines.push(l));
  const ended = new Promise((done) => stream.on("end", done));
  for (const c of chunks) stream.write(c);
  stream.end();
  stream.resume();
  await ended;
  return lines;
}

describe("lines", () => {
  after(cleanupTemp);

  it("splits on newlines across chunks, strips CR, keeps the last redraw, flushes the last line", async () => {
    assert.deepEqual(await linesOf(["a\nb", "c\r\n", "\n10%\r50%\r100%\n", "tail"]), [
      "a",
      "bc",
      "",
      "100%",
      "tail",
    ]);
  });

  it("keeps a character split across chunks whole", async () => {
    const bytes = Buffer.from("é€😀\n");
    assert.deepEqual(await linesOf([bytes.subarray(0, 1), bytes.subarray(1, 4), bytes.subarray(4)]), [
      "é€😀",
    ]);
  });

  it("passes a line of exactly 64 KiB whole", async () => {
    const line = "x".repeat(MAX_LINE_BYTES);
    assert.deepEqual(await linesOf([`${line}\nnext\n`]), [line, "next"]);
  });

  it("cuts a 10 MB line at 64 KiB, says how much was cut, and goes on", async () => {
    const chunk = "y".repeat(1024 * 1024);
    const lines = await linesOf([..."0123456789"].map(() => chunk).concat(["\nafter\n"]));
    assert.equal(lines.length, 2);
    assert.equal(
      lines[0],
      `${"y".repeat(MAX_LINE_BYTES)} … [cut: ${10 * 1024 * 1024 - MAX_LINE_BYTES} bytes]`,
    );
    assert.equal(lines[1], "after");
  });

  it("never cuts inside a character", async () => {
    // 3-byte characters: 64 KiB is not a multiple of 3, so the cut falls inside one.
    const lines = await linesOf([`${"€".repeat(30_000)}\n`]);
    const kept = Math.floor(MAX_LINE_BYTES / 3);
    assert.equal(lines[0], `${"€".repeat(kept)} … [cut: ${90_000 - kept * 3} bytes]`);
    assert.ok(!lines[0]?.includes("\ufffd"));
  });

  it("cutLine cuts a string the same way", () => {
    assert.equal(cutLine("short"), "short");
    assert.equal(cutLine("é".repeat(10), 5), "éé … [cut: 16 bytes]");
    assert.equal(cutLine("x".repeat(MAX_LINE_BYTES + 3)), `${"x".repeat(MAX_LINE_BYTES)} … [cut: 3 bytes]`);
  });

  it("a build step printing a 10 MB line: the line is cut at 64 KiB and the build goes on", {
    skip,
  }, async () => {
    const rt = newRuntime(tempDir(), { sandbox: "bwrap", uidRange: RANGE });
    after(() => rt.close());
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      {
        installCommand: "head -c 10485760 /dev/zero | tr '\\0' y; echo; echo after-the-long-line",
        buildCommand: "echo the-build-ran",
      },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    const long = ctx.lines.build.filter((l) => l.startsWith("yyyy"));
    assert.deepEqual(
      long.map((l) => l.length),
      [MAX_LINE_BYTES + ` … [cut: ${10 * 1024 * 1024 - MAX_LINE_BYTES} bytes]`.length],
    );
    assert.ok(long[0]?.endsWith(` … [cut: ${10 * 1024 * 1024 - MAX_LINE_BYTES} bytes]`));
    assert.ok(ctx.lines.build.includes("after-the-long-line"), "the step's output goes on after the cut");
    assert.ok(ctx.lines.build.includes("the-build-ran"), "the next step runs");
    assert.equal(await rt.isBuilt(s), true);
  });
});
