import { preconditionFailed } from "../../core/errors.ts";

function tags(header: string): string[] {
  return header
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
}

/** If-Match with strong comparison (RFC 9110 §13.1.1): a weak tag never matches. */
export function checkIfMatch(header: string, current: string): void {
  const list = tags(header);
  if (list.includes("*") || list.includes(current)) return;
  throw preconditionFailed("If-Match does not match the deployment's current ETag: GET it again.");
}

/** If-None-Match with weak comparison: true when the client already has this version. */
export function notModified(header: string | undefined, current: string): boolean {
  if (header === undefined) return false;
  const list = tags(header).map((t) => t.replace(/^W\//, ""));
  return list.includes("*") || list.includes(current);
}
