/**
 * What can go wrong when reading a code host, in the code host's own words. The layers above
 * decide what each means to them: `http/errors.ts` maps them to status codes, deployment rules
 * name the request field at fault, and the reconciler treats a missing source as CREATE_FAILED.
 */
export class CodehostError extends Error {}

/** The host (GitHub, or the integration's directory) could not answer, or cannot be reached as configured. */
export class HostUnavailable extends CodehostError {}

/** No such integration (or not one of the asking organization). */
export class IntegrationNotFound extends CodehostError {}

/** The integration does not make this repository available. */
export class RepoNotFound extends CodehostError {}

/** The ref cannot name a branch or tag, or names none that exists in the repository. */
export class RefNotFound extends CodehostError {}

/** The GitHub App has no installation with this id. */
export class InstallationNotFound extends CodehostError {}
