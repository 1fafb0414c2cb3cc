/**
 * A stand-in for a Slipway process killed during a build: starts a LocalRuntime, prepares and
 * builds one directory app whose build step never ends, and idles (the test kills it with SIGKILL
 * once the step has written its pid).
 * Usage: node --import tsx build-host.ts <dataDir> <specJson>
 */
import { hostArgs, newRuntime } from "./local-runtime.ts";

const { dataDir, spec } = hostArgs("build-host.ts");
const runtime = newRuntime(dataDir);
await runtime.start();
const ctx = {
  log: (_stream: string, line: string) => process.stdout.write(`${line}\n`),
  signal: new AbortController().signal,
};
await runtime.prepare(spec, ctx);
await runtime.build(spec, ctx);
process.stdout.write("build ended\n");
setInterval(() => {}, 60_000);
