/**
 * What can go wrong when reading a code host, in the code host's own words. The layers above
 * decide what each means to them: each is a domain error whose kind `http/errors.ts` maps to a status code, deployment rules
 * name the request field at fault, and the reconciler treats a missing source as CREATE_FAILED.
 */
import { DomainError, type Refusal } from "../core/errors.ts";

export class CodehostError extends DomainError {
  constructor(kind: Refusal, message: string) {
    super(kind, message);
  }
}

/** The host (GitHub, or the integration's directory) could not answer, or cannot be reached as configured. */
export class HostUnavailable extends CodehostError {
  constructor(message: string) {
    super("bad_gateway", message);
  }
}

/** No such integration (or not one of the asking organization). */
export class IntegrationNotFound extends CodehostError {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The integration does not make this repository available. */
export class RepoNotFound extends CodehostError {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The ref cannot name a branch or tag, or names none that exists in the repository. */
export class RefNotFound extends CodehostError {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The GitHub App has no installation with this id. */
export class InstallationNotFound extends CodehostError {
  constructor(message: string) {
    super("not_found", message);
  }
}
