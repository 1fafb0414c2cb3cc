/**
 * A stand-in for a Slipway process killed during a build: starts a LocalRuntime, prepares and
 * builds one directory app whose build step never ends, and idles (the test kills it with SIGKILL
 * once the step has written its pid).
 * Usage: node --import tsx build-host.ts <dataDir> <specJson>
 */
import type { RevisionSpec } from "../../src/runtimes/interface.ts";
import { LocalRuntime } from "../../src/runtimes/local/runtime.ts";

const [dataDir, specJson] = process.argv.slice(2);
if (dataDir === undefined || specJson === undefined)
  throw new Error("usage: build-host.ts <dataDir> <specJson>");
const spec = JSON.parse(specJson) as RevisionSpec;
const runtime = new LocalRuntime({
  dataDir,
  appsPort: 0,
  appsDomain: "apps.test",
  appsHost: "127.0.0.1",
  healthTimeoutMs: 10_000,
  logger: { info: () => {}, warn: () => {} },
  sandbox: "none",
});
await runtime.start();
const ctx = {
  log: (_stream: string, line: string) => process.stdout.write(`${line}\n`),
  signal: new AbortController().signal,
};
await runtime.prepare(spec, ctx);
await runtime.build(spec, ctx);
process.stdout.write("build ended\n");
setInterval(() => {}, 60_000);
