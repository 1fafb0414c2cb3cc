import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDotenv } from "../../../src/runtimes/build/dotenv.ts";

/** The parsed file as name → value (a later assignment wins). */
function values(text: string): Record<string, string> {
  return Object.fromEntries(parseDotenv(text).entries.map((e) => [e.name, e.value]));
}

describe("dotenv", () => {
  it("reads KEY=value and export KEY=value, trimming around the value", () => {
    assert.deepEqual(values("A=1\nexport B=two\n  C =  three  \nexport\tD=4"), {
      A: "1",
      B: "two",
      C: "three",
      D: "4",
    });
  });

  it("skips comments and blank lines, and counts lines for messages", () => {
    const parsed = parseDotenv("# a comment\n\n   \n  # indented comment\nA=1\r\nB=2\r\n");
    assert.deepEqual(
      parsed.entries.map((e) => [e.name, e.value, e.line]),
      [
        ["A", "1", 5],
        ["B", "2", 6],
      ],
    );
    assert.deepEqual(parsed.skipped, []);
  });

  it("keeps single-quoted values literally", () => {
    assert.deepEqual(values(`A='a \\n b # not a comment'\nB='  spaced  '\nC='$HOME'`), {
      A: "a \\n b # not a comment",
      B: "  spaced  ",
      C: "$HOME",
    });
  });

  it("turns \\n and \\r in double quotes into line breaks, nothing else", () => {
    assert.deepEqual(values(`A="line one\\nline two"\nB="a\\rb"\nC="tab\\t # kept"`), {
      A: "line one\nline two",
      B: "a\rb",
      C: "tab\\t # kept",
    });
  });

  it("reads quoted values that span lines, and counts the lines they take", () => {
    const parsed = parseDotenv(`KEY="-----BEGIN-----\nabc\n-----END-----"\nNEXT='x\ny'\nLAST=1`);
    assert.deepEqual(
      parsed.entries.map((e) => [e.name, e.value, e.line]),
      [
        ["KEY", "-----BEGIN-----\nabc\n-----END-----", 1],
        ["NEXT", "x\ny", 4],
        ["LAST", "1", 6],
      ],
    );
  });

  it("ends an unquoted value at #, and allows a comment after a quoted one", () => {
    assert.deepEqual(values(`A=value # comment\nB=ab#cd\nC="quoted" # comment\nD='q'#c\nE=\nF=#only`), {
      A: "value",
      B: "ab",
      C: "quoted",
      D: "q",
      E: "",
      F: "",
    });
  });

  it("reads an unclosed quote, or text after the closing one, as an unquoted value", () => {
    assert.deepEqual(values(`A="open\nB="x" y\nC=2`), { A: '"open', B: '"x" y', C: "2" });
  });

  it("a later assignment wins; backticks quote too; NAME: value is an assignment", () => {
    assert.deepEqual(values("A=1\nA=2\nB=`x 'y' \"z\"`\nC: colon"), {
      A: "2",
      B: `x 'y' "z"`,
      C: "colon",
    });
  });

  it("reports lines that are not assignments instead of guessing", () => {
    const parsed = parseDotenv("A=1\njust words\nexport\n=nothing\nB=2");
    assert.deepEqual(parsed.skipped, [2, 3, 4]);
    assert.deepEqual(
      parsed.entries.map((e) => e.name),
      ["A", "B"],
    );
  });

  it("names dotenv accepts that are not shell names are returned for the caller to judge", () => {
    assert.deepEqual(values("my.key=1\nmy-key=2"), { "my.key": "1", "my-key": "2" });
  });
});
