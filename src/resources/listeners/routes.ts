import { Type } from "@sinclair/typebox";
import { LISTENER_CHANNEL } from "../../db/channels.ts";
import { ChannelWaiters } from "../../db/waiters.ts";
import { listenerOf, workspaceOf } from "../../http/auth.ts";
import { ErrorBody } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { DesiredQuery, DesiredState, StatusReport } from "../../protocol/listener.ts";
import { pollDesired } from "./desired.ts";
import {
  CreateListenerBody,
  Listener,
  ListenerList,
  ListenerParams,
  ListListenersQuery,
  PatchListenerBody,
} from "./schema.ts";
import { createListener, deleteListener, getListener, listListeners, patchListener } from "./service.ts";
import { reportStatus } from "./status.ts";

const tags = ["listeners"];
const admin = { auth: { role: "admin" as const } };
const listenerOnly = { auth: { listener: true } };
const error = (description: string) => ({ ...ErrorBody, description });

/** Listeners (admin writes) and the two routes a listener's own key calls (docs/kubernetes.md). */
export async function listenerRoutes(app: App): Promise<void> {
  const { db, keyring, config } = app.deps;
  const settings = { timeoutS: config.listeners.timeoutS };
  const waiters = new ChannelWaiters(db, LISTENER_CHANNEL);
  app.addHook("onClose", async () => waiters.close());

  app.get(
    "/v2/listeners",
    {
      schema: {
        tags,
        summary: "List the workspace's listeners, newest first",
        querystring: ListListenersQuery,
        response: { 200: ListenerList },
      },
    },
    async (request) => listListeners(db.orm, settings, workspaceOf(request).workspaceId, request.query),
  );

  app.post(
    "/v2/listeners",
    {
      config: admin,
      schema: {
        tags,
        summary: "Register a listener (a Kubernetes cluster's agent)",
        body: CreateListenerBody,
        response: { 201: Listener, 409: error("A listener for that compute_id exists in the workspace.") },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await createListener(db.orm, settings, workspaceOf(request), request.body)),
  );

  app.get(
    "/v2/listeners/:listener_id",
    {
      schema: { tags, summary: "Get a listener", params: ListenerParams, response: { 200: Listener } },
    },
    async (request) =>
      getListener(db.orm, settings, workspaceOf(request).workspaceId, request.params.listener_id),
  );

  app.patch(
    "/v2/listeners/:listener_id",
    {
      config: admin,
      schema: {
        tags,
        summary: "Change a listener's version or namespaces",
        params: ListenerParams,
        body: PatchListenerBody,
        response: { 200: Listener },
      },
    },
    async (request) =>
      patchListener(db, settings, workspaceOf(request).workspaceId, request.params.listener_id, request.body),
  );

  app.delete(
    "/v2/listeners/:listener_id",
    {
      config: admin,
      schema: {
        tags,
        summary: "Delete a listener and its API keys",
        params: ListenerParams,
        response: {
          204: Type.Null({ description: "Deleted." }),
          409: error("Deployments still use the listener."),
        },
      },
    },
    async (request, reply) => {
      const keyIds = await deleteListener(db, workspaceOf(request).workspaceId, request.params.listener_id);
      for (const id of keyIds) app.authCache.invalidateKey(id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/v2/listeners/:listener_id/desired",
    {
      config: listenerOnly,
      schema: {
        tags,
        summary: "Long-poll the listener's desired state (its own API key only)",
        params: ListenerParams,
        querystring: DesiredQuery,
        response: { 200: DesiredState },
      },
    },
    async (request) => {
      const { listenerId } = listenerOf(request, request.params.listener_id);
      return pollDesired(
        db,
        keyring,
        { appsDomain: config.apps.domain, registry: config.listeners },
        waiters,
        {
          listenerId,
          after: request.query.after,
          waitS: request.query.wait,
          gone: request.signal,
        },
      );
    },
  );

  app.post(
    "/v2/listeners/:listener_id/status",
    {
      config: listenerOnly,
      schema: {
        tags,
        summary: "Report the listener's revisions' rollout states (its own API key only); [] is a heartbeat",
        params: ListenerParams,
        body: StatusReport,
        response: { 204: Type.Null({ description: "Recorded." }) },
      },
    },
    async (request, reply) => {
      const { listenerId } = listenerOf(request, request.params.listener_id);
      await reportStatus(db, listenerId, request.body);
      return reply.code(204).send(null);
    },
  );
}
