import type { Readable } from "node:stream";
import { cloneSourceFor } from "../codehost/clone.ts";
import type { CodehostConfig } from "../codehost/drivers.ts";
import { IntegrationNotFound, RepoNotFound } from "../codehost/errors.ts";
import { DomainError } from "../core/errors.ts";
import type { Executor } from "../db/client.ts";
import { SourceError, type SourceLocation } from "../runtimes/interface.ts";
import { findTemplate } from "../templates/catalog.ts";
import { type RevisionWork, textField } from "./work.ts";

/** Turns a revision's source fields into something a runtime can fetch; throws SourceError when it cannot. */
export type SourceResolver = (work: RevisionWork) => Promise<SourceLocation>;

/**
 * A source that is gone (integration, repository or upload) is CREATE_FAILED; a host that cannot
 * answer now (HostUnavailable) or any other fault is left to the retry policy.
 */
async function orSourceError<T>(
  what: string,
  gone: (err: unknown) => boolean,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (gone(err) && err instanceof Error) throw new SourceError(`${what}: ${err.message}`);
    throw err;
  }
}

const repositoryGone = (err: unknown) => err instanceof IntegrationNotFound || err instanceof RepoNotFound;
/** No completed upload has the path (the uploads resource's not_found). */
const uploadGone = (err: unknown) => err instanceof DomainError && err.kind === "not_found";

/** Opens an uploaded source by its path (the uploads resource's, handed down at wiring). */
export type OpenUpload = (exec: Executor, path: string) => Promise<Readable>;

export function sourceResolver(
  db: Executor,
  codehost: CodehostConfig,
  openUpload: OpenUpload,
): SourceResolver {
  return async (work) => {
    const rev = work.sourceRevisionConfig;
    switch (work.source) {
      case "codehost": {
        const integrationId = textField(work.deploymentSourceConfig, "integration_id");
        const repoUrl = textField(work.deploymentSourceConfig, "repo_url");
        const ref = textField(rev, "repo_ref");
        if (!integrationId || !repoUrl || !ref) {
          throw new SourceError("the deployment has no integration_id, repo_url or repo_ref to fetch from");
        }
        const url = await orSourceError("the repository cannot be fetched", repositoryGone, () =>
          cloneSourceFor(db, codehost, integrationId, repoUrl),
        );
        return { kind: "git", url, ref, commitSha: textField(rev, "repo_commit_sha") };
      }
      case "internal_source": {
        const path = textField(rev, "source_tarball_path");
        if (!path) throw new SourceError("the revision has no source_tarball_path");
        // Checked now so a missing upload is CREATE_FAILED before any work starts.
        await orSourceError("the uploaded source cannot be read", uploadGone, () => openUpload(db, path));
        return { kind: "tarball", open: () => openUpload(db, path) };
      }
      case "internal_template": {
        const name = textField(rev, "repo_ref") ?? "";
        const template = findTemplate(name);
        if (!template) throw new SourceError(`there is no built-in template named "${name}"`);
        return { kind: "directory", path: template.path };
      }
      case "internal_docker":
      case "external_docker": {
        const imageUri = textField(rev, "image_uri");
        if (!imageUri) throw new SourceError("the revision has no image_uri");
        return { kind: "image", imageUri };
      }
      default:
        throw new SourceError(`unknown source ${work.source}`);
    }
  };
}
