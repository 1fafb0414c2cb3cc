import { notFound } from "../../core/errors.ts";
import type { Executor } from "../../db/client.ts";
import type { TracingProject } from "./schema.ts";
import { findTracingProject } from "./store.ts";

export async function getTracingProject(
  exec: Executor,
  workspaceId: string,
  id: string,
): Promise<TracingProject> {
  const row = await findTracingProject(exec, workspaceId, id);
  if (!row) throw notFound("Tracing project not found.");
  return row;
}
