import { access } from "node:fs/promises";

/** Whether anything is at `path` (a file, a directory, a link that resolves). */
export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
