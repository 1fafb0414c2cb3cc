import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Interrupted } from "../../src/cli/output.ts";
import { askHidden, type KeyInput } from "../../src/cli/prompt.ts";
import { freePort } from "../e2e/stack.ts";
import { runCli, runCliInTerminal } from "../helpers/cli.ts";
import { forEachDatabase } from "../helpers/harness.ts";

/** A terminal's input as the reader sees it: raw mode recorded, keys sent as chunks. */
class FakeTerminal extends EventEmitter implements KeyInput {
  isTTY = true;
  isRaw = false;
  modes: boolean[] = [];
  paused = true;
  setRawMode(mode: boolean) {
    this.isRaw = mode;
    this.modes.push(mode);
  }
  setEncoding() {}
  resume() {
    this.paused = false;
  }
  pause() {
    this.paused = true;
  }
  keys(...chunks: string[]) {
    for (const c of chunks) this.emit("data", c);
  }
}

function reader() {
  const input = new FakeTerminal();
  let shown = "";
  const output = { write: (t: string) => (shown += t) };
  return { input, shown: () => shown, ask: () => askHidden("Key: ", input, output) };
}

describe("askHidden: a line read in raw mode, never echoed", () => {
  it("takes typed and pasted characters up to Enter, echoes none, restores the mode", async () => {
    const r = reader();
    const answer = r.ask();
    r.input.keys("s", "w_", "secret-key-123", "\r");
    assert.equal(await answer, "sw_secret-key-123");
    assert.equal(r.shown(), "Key: \n", "the prompt and a newline, nothing typed");
    assert.deepEqual(r.input.modes, [true, false]);
    assert.equal(r.input.paused, true, "stdin is released: the process can exit");
  });

  it("Backspace removes the last character (a whole emoji too), Ctrl-U the line; arrow keys add nothing", async () => {
    const r = reader();
    const answer = r.ask();
    r.input.keys("abc\u007f", "d\b", "x", "\u001b[D", "🔑", "\u007f", "\n");
    assert.equal(await answer, "abx");
    const r2 = reader();
    const cleared = r2.ask();
    r2.input.keys("wrong\u0015right\r");
    assert.equal(await cleared, "right");
  });

  it("Ctrl-C rejects as an interruption and restores the mode; Ctrl-D on an empty line ends it", async () => {
    const r = reader();
    const answer = r.ask();
    r.input.keys("half", "\u0003", "ignored\r");
    await assert.rejects(answer, Interrupted);
    assert.deepEqual(r.input.modes, [true, false]);
    const d = reader();
    const empty = d.ask();
    d.input.keys("\u0004");
    assert.equal(await empty, "");
  });
});

const apiPort = await freePort();

forEachDatabase("slipway login on a terminal", (suite) => {
  let env: Record<string, string>;
  const home = mkdtempSync(join(tmpdir(), "slipway-cli-login-"));
  before(async () => {
    await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
    env = { HOME: home, XDG_CONFIG_HOME: join(home, "config") };
  });
  after(() => rmSync(home, { recursive: true, force: true }));
  const url = () => `http://127.0.0.1:${apiPort}`;
  const config = () => join(home, "config", "slipway", "config.json");

  it("asks for the key without echoing it, and stores it", async () => {
    const key = suite.ctx.keys.viewer;
    const login = runCliInTerminal(["login", "--url", url()], env);
    await login.waitFor(/API key \(not shown as you type\): /);
    // A typo erased with Backspace first, as a person would.
    login.type("x\u007f");
    login.type(`${key}\r`);
    assert.equal(await login.exited, 0, login.output());
    assert.ok(!login.output().includes(key), `the key was echoed:\n${login.output()}`);
    assert.match(login.output(), /Logged in to/);
    assert.equal(JSON.parse(readFileSync(config(), "utf8")).profiles.default.api_key, key);
  });

  it("Ctrl-C at the prompt stores nothing and exits 130; without a terminal it refuses as before", async () => {
    rmSync(config(), { force: true });
    const login = runCliInTerminal(["login", "--url", url(), "--profile", "other"], env);
    await login.waitFor(/API key/);
    login.type("sw_half\u0003");
    assert.equal(await login.exited, 130, login.output());
    assert.ok(!existsSync(config()), "no profile stored");
    const piped = await runCli(["login", "--url", url()], env);
    assert.equal(piped.code, 2);
    assert.match(piped.stderr, /Give --api-key KEY/);
  });
});
