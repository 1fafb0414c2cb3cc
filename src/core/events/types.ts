/** Every event type there is; webhooks subscribe to a subset, the stream can narrow to one. */
export const EVENT_TYPES = [
  "deployment.created",
  "deployment.deleted",
  "deployment.status_changed",
  "deployment.storage_exceeded",
  "certificate.issued",
  "certificate.failed",
  "deployment.unhealthy",
  "deployment.healthy",
  "revision.status_changed",
  "listener.status_changed",
  "oauth.token.created",
  "oauth.token.refresh_failed",
  "oauth.token.revoked",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
