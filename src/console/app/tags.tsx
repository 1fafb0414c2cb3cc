// A deployment's tags: `key: value` badges; members and admins add (key and value made when new) and remove.
import { useState } from "preact/hooks";
import { type Slipway, unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { ErrorBox, useAction, useLoad } from "./ui.tsx";

/** The id of the workspace's tag value `key: value`, creating the key and the value when missing. */
async function tagValueId(client: Slipway, key: string, value: string): Promise<string> {
  const keys = await unwrap(client.api.GET("/v2/tags/keys", {}));
  const keyId =
    keys.find((k) => k.key === key)?.id ??
    (await unwrap(client.api.POST("/v2/tags/keys", { body: { key } }))).id;
  const path = { key_id: keyId };
  const values = await unwrap(client.api.GET("/v2/tags/keys/{key_id}/values", { params: { path } }));
  return (
    values.find((v) => v.value === value)?.id ??
    (await unwrap(client.api.POST("/v2/tags/keys/{key_id}/values", { params: { path }, body: { value } }))).id
  );
}

export function Tags({ session, deploymentId }: { session: Session; deploymentId: string }) {
  const { client } = session;
  const path = { deployment_id: deploymentId };
  const tags = useLoad(
    () => unwrap(client.api.GET("/v2/deployments/{deployment_id}/tags", { params: { path } })),
    [deploymentId],
  );
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const action = useAction(() => {
    setKey("");
    setValue("");
    tags.reload();
  });
  const writable = session.role !== "viewer";
  const add = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const tag_value_id = await tagValueId(client, key.trim(), value.trim());
      await unwrap(
        client.api.POST("/v2/deployments/{deployment_id}/tags", { params: { path }, body: { tag_value_id } }),
      );
    });
  };
  const remove = (tagValueId: string) =>
    action.run(() =>
      unwrap(
        client.api.DELETE("/v2/deployments/{deployment_id}/tags/{tag_value_id}", {
          params: { path: { ...path, tag_value_id: tagValueId } },
        }),
      ),
    );
  return (
    <div>
      <ErrorBox error={tags.error ?? action.error} />
      <p>
        {tags.data?.length
          ? tags.data.map((t) => (
              <span class="badge" data-tag={`${t.key}:${t.value}`}>
                {t.key}: {t.value}
                {writable && (
                  <button
                    type="button"
                    class="link"
                    aria-label={`Remove tag ${t.key}: ${t.value}`}
                    disabled={action.busy}
                    onClick={() => remove(t.tag_value_id)}
                  >
                    ×
                  </button>
                )}
              </span>
            ))
          : "No tags."}
      </p>
      {writable && (
        <form class="toolbar" onSubmit={add} aria-label="Add a tag">
          <input
            placeholder="key"
            aria-label="Tag key"
            value={key}
            required
            onInput={(e) => setKey(e.currentTarget.value)}
          />
          <input
            placeholder="value"
            aria-label="Tag value"
            value={value}
            required
            onInput={(e) => setValue(e.currentTarget.value)}
          />
          <button type="submit" disabled={action.busy || !key.trim() || !value.trim()}>
            Add tag
          </button>
        </form>
      )}
    </div>
  );
}
