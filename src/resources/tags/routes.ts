import { Type } from "@sinclair/typebox";
import { DeploymentParams } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import {
  CreateDeploymentTagBody,
  CreateTagKeyBody,
  CreateTagValueBody,
  DeploymentTag,
  DeploymentTagParams,
  TagKey,
  TagKeyParams,
  TagValue,
  TagValueParams,
} from "./schema.ts";
import {
  createTagKey,
  createTagValue,
  deleteTagKey,
  deleteTagValue,
  listDeploymentTags,
  listTagKeys,
  listTagValues,
  tagDeployment,
  untagDeployment,
} from "./service.ts";

const tags = ["tags"];
const exists = (what: string) => errorResponse(`${what} already exists.`);

/** Resource tags of a workspace: keys, their values, and which deployments carry which values. */
export async function tagRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;
  const ws = (request: Parameters<typeof workspaceOf>[0]) => workspaceOf(request).workspaceId;

  app.get(
    "/v2/tags/keys",
    { schema: { tags, summary: "List the workspace's tag keys", response: { 200: Type.Array(TagKey) } } },
    async (request) => listTagKeys(orm, ws(request)),
  );

  app.post(
    "/v2/tags/keys",
    {
      schema: {
        tags,
        summary: "Create a tag key",
        body: CreateTagKeyBody,
        response: { 201: TagKey, 409: exists("A key of that name") },
      },
    },
    async (request, reply) => reply.code(201).send(await createTagKey(orm, ws(request), request.body.key)),
  );

  app.delete(
    "/v2/tags/keys/:key_id",
    {
      schema: {
        tags,
        summary: "Delete a tag key with its values and their taggings",
        params: TagKeyParams,
        response: { 200: TagKey },
      },
    },
    async (request) => deleteTagKey(orm, ws(request), request.params.key_id),
  );

  app.get(
    "/v2/tags/keys/:key_id/values",
    {
      schema: {
        tags,
        summary: "List a tag key's values",
        params: TagKeyParams,
        response: { 200: Type.Array(TagValue) },
      },
    },
    async (request) => listTagValues(orm, ws(request), request.params.key_id),
  );

  app.post(
    "/v2/tags/keys/:key_id/values",
    {
      schema: {
        tags,
        summary: "Create a value of a tag key",
        params: TagKeyParams,
        body: CreateTagValueBody,
        response: { 201: TagValue, 409: exists("That value of the key") },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await createTagValue(orm, ws(request), request.params.key_id, request.body.value)),
  );

  app.delete(
    "/v2/tags/keys/:key_id/values/:value_id",
    {
      schema: {
        tags,
        summary: "Delete a tag value and its taggings",
        params: TagValueParams,
        response: { 200: TagValue },
      },
    },
    async (request) => deleteTagValue(orm, ws(request), request.params.key_id, request.params.value_id),
  );

  app.get(
    "/v2/deployments/:deployment_id/tags",
    {
      schema: {
        tags,
        summary: "List a deployment's tags",
        params: DeploymentParams,
        response: { 200: Type.Array(DeploymentTag) },
      },
    },
    async (request) => listDeploymentTags(orm, ws(request), request.params.deployment_id),
  );

  app.post(
    "/v2/deployments/:deployment_id/tags",
    {
      schema: {
        tags,
        summary: "Tag a deployment with a tag value",
        params: DeploymentParams,
        body: CreateDeploymentTagBody,
        response: { 201: DeploymentTag, 409: exists("This tagging") },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await tagDeployment(orm, ws(request), request.params.deployment_id, request.body.tag_value_id)),
  );

  app.delete(
    "/v2/deployments/:deployment_id/tags/:tag_value_id",
    {
      schema: {
        tags,
        summary: "Remove a tag value from a deployment",
        params: DeploymentTagParams,
        response: { 200: DeploymentTag },
      },
    },
    async (request) =>
      untagDeployment(orm, ws(request), request.params.deployment_id, request.params.tag_value_id),
  );
}
