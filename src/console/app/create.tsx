// Create a deployment from a template, a repository of an integration, an image, or an archive.
import { useEffect, useState } from "preact/hooks";
import { type CreateDeploymentBody, type Slipway, unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { ErrorBox, useAction, useLoad } from "./ui.tsx";

type Kind = "template" | "repository" | "image" | "archive";
type Template = { name: string; description: string };

/** The template list per client (so per key and workspace), asked for once. */
const templateCache = new WeakMap<Slipway, { promise: Promise<Template[]>; value?: Template[] }>();

/**
 * Fetches the template list into the cache; the console calls it at sign-in, so that the form shows
 * the list at once instead of after a request of its own. A failure is forgotten, to be asked again.
 */
export function loadTemplates(client: Slipway): Promise<Template[]> {
  const cached = templateCache.get(client);
  if (cached) return cached.promise;
  const entry: { promise: Promise<Template[]>; value?: Template[] } = {
    promise: unwrap(client.api.GET("/v2/templates", {})).then(
      (list) => {
        entry.value = list;
        return list;
      },
      (err: unknown) => {
        templateCache.delete(client);
        throw err;
      },
    ),
  };
  templateCache.set(client, entry);
  return entry.promise;
}

/** The templates: from the cache in the first render when they are there already. */
function useTemplates(client: Slipway): { data?: Template[]; error?: string } {
  const [state, setState] = useState<{ data?: Template[]; error?: string }>(() => ({
    data: templateCache.get(client)?.value,
  }));
  useEffect(() => {
    let live = true;
    loadTemplates(client).then(
      (data) => live && setState({ data }),
      (err: unknown) => live && setState({ error: err instanceof Error ? err.message : String(err) }),
    );
    return () => {
      live = false;
    };
  }, [client]);
  return state;
}

function parseSecrets(text: string): { name: string; value: string }[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const eq = l.indexOf("=");
      return { name: eq > 0 ? l.slice(0, eq) : l, value: eq > 0 ? l.slice(eq + 1) : "" };
    });
}

export function CreatePage({ session }: { session: Session }) {
  const api = session.client.api;
  const [kind, setKind] = useState<Kind>("template");
  const [name, setName] = useState("");
  const [template, setTemplate] = useState("");
  const [integration, setIntegration] = useState("");
  const [repo, setRepo] = useState("");
  const [image, setImage] = useState("");
  const [file, setFile] = useState<File>();
  const [secrets, setSecrets] = useState("");
  const templates = useTemplates(session.client);
  const integrations = useLoad(() => unwrap(api.GET("/v1/integrations/forge/codehost/install", {})), []);
  const repos = useLoad(
    () =>
      integration
        ? unwrap(
            api.GET("/v1/integrations/forge/codehost/{integration_id}/repos", {
              params: { path: { integration_id: integration } },
            }),
          )
        : Promise.resolve([]),
    [integration],
  );
  const action = useAction(() => undefined);
  const create = () =>
    action.run(async () => {
      const common = { name, secrets: parseSecrets(secrets) };
      let body: CreateDeploymentBody;
      if (kind === "template") {
        const chosen = template || templates.data?.[0]?.name || "";
        body = {
          ...common,
          source: "internal_template",
          source_revision_config: { repo_ref: chosen, framework_config_path: "slipway.json" },
        };
      } else if (kind === "repository") {
        const r = repos.data?.find((x) => x.url === repo);
        if (!r) throw new Error("Pick a repository.");
        body = {
          ...common,
          source: "codehost",
          source_config: { integration_id: r.host_integration_id, repo_url: r.url },
          source_revision_config: { repo_ref: r.default_branch, framework_config_path: "slipway.json" },
        };
      } else if (kind === "image") {
        body = { ...common, source: "external_docker", source_revision_config: { image_uri: image } };
      } else {
        if (!file) throw new Error("Choose a .tar.gz archive of the app.");
        body = { ...common, source: "internal_source" };
      }
      const dep = await unwrap(api.POST("/v2/deployments", { body }));
      if (kind === "archive" && file) {
        const target = await unwrap(
          api.POST("/v2/deployments/{deployment_id}/upload-url", {
            params: { path: { deployment_id: dep.id } },
          }),
        );
        const put = await fetch(target.upload_url, {
          method: "PUT",
          headers: { "content-type": "application/gzip" },
          body: file,
        });
        if (!put.ok) throw new Error(`The upload answered ${put.status}.`);
        await unwrap(
          api.PATCH("/v2/deployments/{deployment_id}", {
            params: { path: { deployment_id: dep.id } },
            body: {
              source_revision_config: {
                source_tarball_path: target.source_tarball_path,
                framework_config_path: "slipway.json",
              },
            },
          }),
        );
      }
      location.hash = `#/deployments/${dep.id}`;
    });
  return (
    <section>
      <h2>New deployment</h2>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          create();
        }}
      >
        <label>
          Name <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <fieldset class="tabs">
          {(["template", "repository", "image", "archive"] as const).map((k) => (
            <label>
              <input type="radio" name="kind" checked={kind === k} onChange={() => setKind(k)} /> {k}
            </label>
          ))}
        </fieldset>
        {kind === "template" && (
          <label>
            Template
            <select name="template" value={template} onChange={(e) => setTemplate(e.currentTarget.value)}>
              {templates.data?.map((t) => (
                <option value={t.name}>
                  {t.name} — {t.description}
                </option>
              ))}
            </select>
            <ErrorBox error={templates.error} />
          </label>
        )}
        {kind === "repository" && (
          <>
            <label>
              Integration
              <select value={integration} onChange={(e) => setIntegration(e.currentTarget.value)}>
                <option value="">choose…</option>
                {integrations.data?.map((i) => (
                  <option value={i.id}>
                    {i.name} ({i.kind})
                  </option>
                ))}
              </select>
            </label>
            <label>
              Repository
              <select value={repo} onChange={(e) => setRepo(e.currentTarget.value)}>
                <option value="">choose…</option>
                {repos.data?.map((r) => (
                  <option value={r.url}>
                    {r.owner}/{r.name} ({r.default_branch})
                  </option>
                ))}
              </select>
            </label>
            <ErrorBox error={repos.error} />
          </>
        )}
        {kind === "image" && (
          <label>
            Image URI{" "}
            <input
              value={image}
              onInput={(e) => setImage(e.currentTarget.value)}
              placeholder="docker.io/library/nginx:1"
            />
          </label>
        )}
        {kind === "archive" && (
          <label>
            Archive (.tar.gz with slipway.json)
            <input
              type="file"
              accept=".gz,.tgz,application/gzip"
              onChange={(e) => setFile(e.currentTarget.files?.[0])}
            />
          </label>
        )}
        <label>
          Secrets (NAME=VALUE, one a line)
          <textarea name="secrets" value={secrets} onInput={(e) => setSecrets(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={action.busy}>
          Create
        </button>
        <ErrorBox error={action.error} />
      </form>
    </section>
  );
}
