import { hostSystem, probeBwrap } from "../../src/runtimes/local/sandbox/sandbox.ts";

/** Whether the tests run as root (then each deployment gets a uid of the suite's range). */
export const root = process.getuid?.() === 0;

/**
 * Whether bubblewrap works here for a suite that gives its deployments uids from `range` (each
 * suite has its own, so suites running at once never share a uid): `false`, or the reason to skip.
 * In CI bubblewrap is installed, so there a sandbox suite must run, never be skipped.
 */
export async function bwrapSkip(range: { first: number }): Promise<false | string> {
  const problem = await probeBwrap(hostSystem(), root ? { uid: range.first, gid: range.first } : undefined);
  if (problem !== undefined && process.env.CI === "true") {
    throw new Error(`bubblewrap must work in CI: ${problem}`);
  }
  return problem === undefined ? false : `bubblewrap is not usable here: ${problem}`;
}
