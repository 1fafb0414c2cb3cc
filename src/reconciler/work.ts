import type { DeploymentStatus, RevisionStatus } from "../core/revisions/states.ts";
import type { DeploymentType } from "../runtimes/interface.ts";

/** A revision with what the reconciler needs of its deployment (reconciler/store.ts reads it). */
export interface RevisionWork {
  id: string;
  deploymentId: string;
  seq: number;
  status: RevisionStatus;
  source: string;
  /** The runtime that serves the revision (a key of the reconciler's runtimes). */
  runtime: string;
  sourceRevisionConfig: Record<string, unknown>;
  resourceSpec: Record<string, unknown> | null;
  /** `secret_references` of the revision (external_docker), resolved at deploy. */
  secretReferences?: unknown;
  buildConfig: Record<string, unknown>;
  attempts: number;
  deploymentName: string;
  deploymentType: DeploymentType;
  deploymentStatus: DeploymentStatus;
  deploymentSourceConfig: Record<string, unknown>;
  organizationId: string;
  workspaceId: string;
  activeRevisionId: string | null;
}

/** A string field of a jsonb config, or undefined when absent, null or empty. */
export function textField(obj: Record<string, unknown>, key: string): string | undefined {
  const v = obj[key];
  return typeof v === "string" && v !== "" ? v : undefined;
}
