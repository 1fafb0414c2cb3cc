import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { clientDoc } from "../../src/cli/client.ts";
import { CLIENT_DOCS, SERVER_DOCS } from "../../src/cli/help.ts";
import { type CliResult, runCli } from "../helpers/cli.ts";
import { REPO_ROOT } from "../helpers/process.ts";

/** No server listens there: a command that tried to reach one would exit 6, not what is asserted. */
const ENV = { SLIPWAY_URL: "http://127.0.0.1:9", SLIPWAY_API_KEY: "sw_unused" };

/** Runs the CLI once per argument list, two at a time. */
async function runAll(lists: string[][]): Promise<CliResult[]> {
  const results: CliResult[] = new Array(lists.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < lists.length; i = next++) results[i] = await runCli(lists[i] ?? [], ENV);
  };
  await Promise.all([worker(), worker()]);
  return results;
}

/** docs/cli.md, where the commands are documented. */
const cliPage = () => readFileSync(join(REPO_ROOT, "docs", "cli.md"), "utf8");

/** The body of one `## NAME` section of docs/cli.md, up to the next `##` heading. */
function section(page: string, name: string): string {
  const body = page.split(new RegExp(`^## ${name}$`, "m"))[1];
  assert.ok(body !== undefined, `docs/cli.md has a "## ${name}" section`);
  return body.split(/^## /m)[0] ?? "";
}

/** The usage lines of the "Client commands" table (the first cell of each row). */
function docsTableUsages(): string[] {
  return [...section(cliPage(), "Client commands").matchAll(/^\| `((?:[^`])+)` \|/gm)].map((m) =>
    (m[1] ?? "").replace(/\\\|/g, "|"),
  );
}

/** The commands listed in the "Server commands" section (its `- \`…\`` items). */
function docsServerUsages(): string[] {
  return [...section(cliPage(), "Server commands").matchAll(/^- `([^`]+)`/gm)].map((m) => m[1] ?? "");
}

const CLIENT = Object.keys(CLIENT_DOCS);
/** How each server command is typed, and what its help's first line says. */
const SERVER: [string[], string][] = [
  [["serve"], "serve"],
  [["migrate"], "migrate [--check]"],
  [["restore"], "restore FILE [--force]"],
  [["keys", "rotate"], "keys rotate [--new]"],
  [["listener"], "listener --url URL --api-key KEY --listener-id ID [options]"],
  [["hook"], "hook post-receive --url URL --integration ID --secret-file FILE"],
  [["hook", "post-receive"], "hook post-receive --url URL --integration ID --secret-file FILE"],
];

describe("slipway --help, --version, did you mean", () => {
  it("every command's --help prints its own usage lines on stdout and exits 0; so do -h and help NAME", async () => {
    const results = await runAll([
      ...CLIENT.map((c) => [c, "--help"]),
      ...SERVER.map(([words]) => [...words, "--help"]),
      ["deploy", "-h"],
      ["logs", "app", "-h"],
      ["serve", "-h"],
      ["help", "rollback"],
      // Help wins over a line that would not parse.
      ["deploy", "--bogus", "--help"],
    ]);
    const expected = [
      ...CLIENT.map((c) => clientDoc(c)?.usage ?? []),
      ...SERVER.map(([, usage]) => [usage]),
      CLIENT_DOCS.deploy?.usage ?? [],
      CLIENT_DOCS.logs?.usage ?? [],
      ["serve"],
      CLIENT_DOCS.rollback?.usage ?? [],
      CLIENT_DOCS.deploy?.usage ?? [],
    ];
    for (const [i, r] of results.entries()) {
      const usage = expected[i] ?? [];
      assert.equal(r.code, 0, `${usage[0]}: ${r.stderr}`);
      assert.ok(r.stdout.startsWith(`Usage: slipway ${usage[0]}\n`), `${usage[0]}:\n${r.stdout}`);
      for (const u of usage) assert.ok(r.stdout.includes(`slipway ${u}\n`), `${u} in:\n${r.stdout}`);
      assert.doesNotMatch(r.stdout, /^Client commands/m, "the command's help, not the general one");
      assert.doesNotMatch(r.stderr, /Error/);
    }
    const general = await runCli(["--help"], ENV);
    assert.equal(general.code, 0);
    for (const c of CLIENT) assert.ok(general.stdout.includes(`  ${CLIENT_DOCS[c]?.usage[0]}\n`), c);
  });

  it("each usage line is a row of docs/cli.md's command table, and each row is a usage line", () => {
    const table = docsTableUsages();
    const usages = CLIENT.flatMap((c) => clientDoc(c)?.usage ?? []);
    assert.deepEqual([...table].sort(), [...new Set(usages)].sort());
    const server = docsServerUsages();
    assert.deepEqual(
      [...server].sort(),
      Object.values(SERVER_DOCS)
        .flatMap((d) => d.usage)
        .sort(),
    );
  });

  it("--version prints the package's version", async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      version: string;
    };
    for (const r of await runAll([["--version"], ["-v"], ["version"]])) {
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${version}\n`);
    }
  });

  it("a mistyped command or option gets the closest one and exit 2, not the whole usage", async () => {
    const [command, none, option, flag, action, global, status] = await runAll([
      ["delpoy"],
      ["frobnicate"],
      ["deploy", ".", "--nmae", "x"],
      ["logs", "app", "--folow"],
      ["secrets", "lst", "app"],
      ["--jsno", "ls"],
      ["ls", "--status", "DEPLOY_FAIL"],
    ]);
    assert.equal(command?.code, 2);
    assert.match(command?.stderr ?? "", /^Unknown command "delpoy"\. Did you mean "deploy"\?$/m);
    assert.match(command?.stderr ?? "", /slipway --help/);
    assert.doesNotMatch(command?.stderr ?? "", /Client commands/, "not the whole usage");
    assert.equal(command?.stdout, "");
    assert.equal(none?.code, 2);
    assert.match(none?.stderr ?? "", /^Unknown command "frobnicate"\.$/m);
    assert.equal(option?.code, 2);
    assert.match(option?.stderr ?? "", /Unknown option --nmae\. Did you mean --name\?/);
    assert.match(option?.stderr ?? "", /^Usage: slipway deploy /m);
    assert.match(option?.stderr ?? "", /slipway deploy --help/);
    assert.equal(flag?.code, 2);
    assert.match(flag?.stderr ?? "", /Did you mean --follow\?/);
    assert.equal(action?.code, 2);
    assert.match(action?.stderr ?? "", /Unknown action "lst"\. Did you mean "list"\?/);
    assert.equal(global?.code, 2);
    assert.match(global?.stderr ?? "", /Did you mean --json\?/);
    // Refused before any request: the server address leads nowhere (that would be exit 6).
    assert.equal(status?.code, 2);
    assert.match(status?.stderr ?? "", /--status DEPLOY_FAIL is not a state/);
    assert.match(status?.stderr ?? "", /AWAITING_DATABASE, READY/);
    assert.match(status?.stderr ?? "", /DEPLOY_FAILED/);
  });

  it("global options may come before the command; server commands refuse arguments they do not take", async () => {
    const [before, serve] = await runAll([
      ["--url", "http://127.0.0.1:9", "--json", "ls"],
      ["serve", "--port", "8080"],
    ]);
    assert.equal(before?.code, 6, before?.stderr);
    assert.match(before?.stdout ?? "", /^\{"event":"error"/, "--json reached the command");
    assert.equal(serve?.code, 2);
    assert.match(serve?.stderr ?? "", /slipway serve takes no arguments/);
  });
});
