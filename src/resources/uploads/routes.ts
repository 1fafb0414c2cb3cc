import type { IncomingMessage } from "node:http";
import { Type } from "@sinclair/typebox";
import { unsupportedMediaType } from "../../core/errors.ts";
import { DeploymentParams } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { UploadClaims } from "./claims.ts";
import { UploadParams, UploadQuery, UploadReceipt, UploadUrl } from "./schema.ts";
import { issueUploadUrl, receiveUpload } from "./service.ts";

const tags = ["uploads"];
const TARBALL_TYPES = ["application/gzip", "application/x-gzip", "application/octet-stream"];

/** The PUT takes a raw tarball stream; its parsers live only in this scope, so JSON stays JSON elsewhere. */
async function tarballUploadRoute(app: App): Promise<void> {
  const { orm } = app.deps.db;
  const { uploadLimitBytes } = app.deps.config;
  const claims = new UploadClaims(app.deps.db);
  // JSON and every other inherited parser is dropped here: this route takes tarballs only.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(TARBALL_TYPES, (_request, payload, done) => done(null, payload));
  app.addContentTypeParser("*", (_request, _payload, done) =>
    done(unsupportedMediaType(`Send the tarball with Content-Type ${TARBALL_TYPES.join(", ")}.`), undefined),
  );

  const inherited = app.validatorCompiler;
  if (!inherited) throw new Error("the app's validator compiler must be set before the upload route");
  app.put(
    "/v2/uploads/:upload_id",
    {
      config: { auth: { public: true } },
      // The body is a stream, checked as it is read; the schema below only documents it.
      validatorCompiler: (route) => (route.httpPart === "body" ? () => true : inherited(route)),
      schema: {
        consumes: TARBALL_TYPES,
        // At run time the body is the request stream (the parser above passes it through).
        body: Type.Unsafe<IncomingMessage | undefined>({
          type: "string",
          format: "binary",
          description: "The .tar.gz archive.",
        }),
        tags,
        summary:
          "Upload a source tarball (.tar.gz) to a URL from POST /v2/deployments/{deployment_id}/upload-url",
        description: "No API key: the URL's `token` is the credential. Single use, expires after 15 minutes.",
        params: UploadParams,
        querystring: UploadQuery,
        response: {
          200: UploadReceipt,
          400: errorResponse("The body ended early."),
          403: errorResponse("Missing or wrong token."),
          409: errorResponse("The URL was already used, or an upload to it is in progress."),
          410: errorResponse("The URL has expired."),
          413: errorResponse("The tarball is over the upload limit; nothing was kept."),
          415: errorResponse("Not a tarball media type."),
        },
      },
    },
    async (request, reply) => {
      const header = request.headers["content-length"];
      const length = header === undefined ? undefined : Number(header);
      try {
        return await receiveUpload(
          orm,
          claims,
          uploadLimitBytes,
          request.params.upload_id,
          request.query.token,
          // Stopping early (limit, not gzip) must not destroy the request: the client still gets the answer.
          request.body?.iterator({ destroyOnReturn: false }),
          Number.isFinite(length) ? length : undefined,
        );
      } catch (err) {
        // The rest of the body may still be on its way: the connection cannot be reused.
        reply.header("connection", "close");
        throw err;
      }
    },
  );
}

export async function uploadRoutes(app: App): Promise<void> {
  const { orm } = app.deps.db;
  const { config } = app.deps;

  app.post(
    "/v2/deployments/:deployment_id/upload-url",
    {
      schema: {
        tags,
        summary: "Get a signed URL to upload an internal_source deployment's source tarball",
        params: DeploymentParams,
        response: { 201: UploadUrl, 400: errorResponse("The deployment's source is not internal_source.") },
      },
    },
    async (request, reply) => {
      const url = await issueUploadUrl(orm, config, workspaceOf(request), request.params.deployment_id);
      return reply.code(201).send(url);
    },
  );

  await app.register(tarballUploadRoute);
}
