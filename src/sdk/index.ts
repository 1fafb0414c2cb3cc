// `slipway/sdk`: the typed client and the helpers every client needs.
export * from "./client.ts";
export * from "./deploy.ts";
export * from "./follow.ts";
export * from "./revisions.ts";
export * from "./sse.ts";
export * from "./upload.ts";
