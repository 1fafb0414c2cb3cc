/**
 * The names processes sharing one database coordinate by: NOTIFY channels and advisory-lock ids.
 * One list, so that a name is spelled once and no two locks share an id.
 */

/** The API signals new work (revisions, interrupts, deletions); payload: a revision or deployment id. */
export const WORK_CHANNEL = "slipway_work";
/** A revision id, after each of its status changes. */
export const STATUS_CHANNEL = "slipway_status";
/** A revision id, after new log lines of it were stored (followers read them from the table). */
export const LOGS_CHANNEL = "slipway_logs";
/** An API key id, when the key was revoked: every process drops it from its auth cache. */
export const AUTH_CHANNEL = "slipway_auth";
/**
 * A workspace id, after a committed change to what GET and list of its deployments and revisions
 * answer (sent by the triggers of migration 0018): every process drops its cached answers of it.
 */
export const RECORDS_CHANNEL = "slipway_records";
/**
 * The transaction-local setting in which a write names the deployment it announces itself after
 * commit (on RECORDS_CHANNEL and the others): the triggers stay silent for its rows (migration 0021).
 */
export const ANNOUNCED_SETTING = "slipway.announced";
/** An OAuth flow id, when the flow finished: long-polling waiters answer. */
export const FLOW_CHANNEL = "slipway_oauth_flows";

/** A listener id (or "*" for every listener), when what it should run may have changed: desired polls answer. */
export const LISTENER_CHANNEL = "slipway_listener_desired";
/** A revision id, after its listener reported on it: the worker waiting for its rollout reads the report. */
export const REPORT_CHANNEL = "slipway_listener_reports";

/** Session lock around applying migrations, so that processes starting together migrate once. */
export const MIGRATION_LOCK = 0x51177a7;
/** Session lock around creating the bootstrap organization and key. */
export const BOOTSTRAP_LOCK = 0x51177a8;
/** Transaction lock of the reconciler leader's periodic work (health checks). */
export const LEADER_LOCK = 0x51177b5;
/** A workspace id, when an event of it was committed: stream followers and the webhook dispatcher wake. */
export const EVENTS_CHANNEL = "slipway_events";
/** Transaction lock of the event sequencer: events get their stream ids one batch at a time. */
export const EVENTS_SEQUENCE_LOCK = 0x51177c1;
/** Transaction lock of revision claims: a workspace's running builds are counted by one claimer at a time. */
export const CLAIM_LOCK = 0x51177e1;
/** Transaction lock of the local_git poller: one process at a time compares branch heads. */
export const LOCAL_GIT_POLL_LOCK = 0x51177d1;
/** A custom domain id, after a domain was verified or removed: every edge reloads its custom hosts. */
export const DOMAINS_CHANNEL = "slipway_domains";
