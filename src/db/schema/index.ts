// Every table the ORM knows; each area keeps its tables in its own file.

export * from "./backups.ts";
export * from "./certificates.ts";
export * from "./codehost.ts";
export * from "./deployments.ts";
export * from "./domains.ts";
export * from "./events.ts";
export * from "./identity.ts";
export * from "./listeners.ts";
export * from "./oauth.ts";
export * from "./reconciler.ts";
