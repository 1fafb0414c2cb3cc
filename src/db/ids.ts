const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether `s` can be a row id. Checked before a lookup so that a malformed id is "not found"
 * rather than a database cast error.
 */
export const isUuid = (s: string): boolean => UUID.test(s);
