// The OAuth provider form: add a provider or edit one (PATCH), with its PKCE and token-endpoint
// settings and the callback URL to register at the provider.
import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { type paths, unwrap } from "../../sdk/client.ts";
import { TemplateFields, TemplatePicker, useCatalog } from "./provider-template.tsx";
import { publicBase, type Session } from "./session.ts";
import { ErrorBox, useAction } from "./ui.tsx";

export type Provider =
  paths["/v2/auth/providers/{provider_id}"]["get"]["responses"][200]["content"]["application/json"];
type AuthMethod = "client_secret_post" | "client_secret_basic" | "none";
type PkceMethod = "S256" | "plain";

const AUTH_METHODS: readonly AuthMethod[] = ["client_secret_post", "client_secret_basic", "none"];

interface Form {
  provider_id: string;
  name: string;
  client_id: string;
  /** Empty: none (add), or keep the stored one (edit). */
  client_secret: string;
  auth_url: string;
  token_url: string;
  uses_pkce: boolean;
  code_challenge_method: PkceMethod;
  token_endpoint_auth_method: AuthMethod;
  /** A catalog template (adding only): the server fills in what the form then leaves out. */
  template: string;
  template_params: Record<string, string>;
}

const EMPTY: Form = {
  provider_id: "",
  name: "",
  client_id: "",
  client_secret: "",
  auth_url: "",
  token_url: "",
  uses_pkce: true,
  code_challenge_method: "S256",
  token_endpoint_auth_method: "client_secret_post",
  template: "",
  template_params: {},
};

const asAuthMethod = (s: string): AuthMethod => AUTH_METHODS.find((m) => m === s) ?? "client_secret_post";

const formOf = (p: Provider): Form => ({
  provider_id: p.provider_id,
  name: p.name,
  client_id: p.client_id,
  client_secret: "",
  auth_url: p.auth_url,
  token_url: p.token_url,
  uses_pkce: p.uses_pkce,
  code_challenge_method: p.code_challenge_method === "plain" ? "plain" : "S256",
  token_endpoint_auth_method: asAuthMethod(p.token_endpoint_auth_method),
  template: "",
  template_params: {},
});

/** Where the provider sends users back: what its app settings must list as the redirect URI. */
export const callbackUrl = (providerId: string): string =>
  `${publicBase()}/v2/auth/callback/${encodeURIComponent(providerId)}`;

function CallbackUrl({ providerId }: { providerId: string }) {
  const url = callbackUrl(providerId || "{provider_id}");
  const [copied, setCopied] = useState(false);
  return (
    <div class="callback">
      <span>Callback URL to register at the provider</span>
      <div class="toolbar">
        <code data-testid="callback-url">{url}</code>
        {providerId && navigator.clipboard && (
          <button
            type="button"
            onClick={() =>
              navigator.clipboard.writeText(url).then(
                () => setCopied(true),
                () => undefined,
              )
            }
          >
            {copied ? "Copied" : "Copy"}
          </button>
        )}
      </div>
    </div>
  );
}

export function ProviderForm({
  session,
  editing,
  done,
}: {
  session: Session;
  /** The provider being edited; undefined: a new one. */
  editing?: Provider;
  done: (message: string) => void;
}) {
  const api = session.client.api;
  const [form, setForm] = useState<Form>(editing ? formOf(editing) : EMPTY);
  const action = useAction(() => undefined);
  const set = (patch: Partial<Form>) => setForm({ ...form, ...patch });
  // The form sits below the list: bring it into view when a row's Edit opens it.
  const ref = useRef<HTMLFormElement>(null);
  const catalog = useCatalog(session);
  const template = editing ? undefined : catalog.data?.find((t) => t.id === form.template);
  useEffect(() => {
    if (editing) ref.current?.scrollIntoView({ block: "nearest" });
  }, []);
  const text = (k: "provider_id" | "name" | "client_id" | "auth_url" | "token_url", label: string) => (
    <label>
      {label}
      <input
        name={k}
        required={!(template && k === "name")}
        placeholder={template && k === "name" ? template.name : undefined}
        value={form[k]}
        disabled={k === "provider_id" && editing !== undefined}
        onInput={(e) => set({ [k]: e.currentTarget.value })}
      />
    </label>
  );
  const submit = () =>
    action.run(async () => {
      const secret = form.client_secret === "" ? {} : { client_secret: form.client_secret };
      const pkce = form.uses_pkce ? { code_challenge_method: form.code_challenge_method } : {};
      const common = {
        name: form.name,
        client_id: form.client_id,
        auth_url: form.auth_url,
        token_url: form.token_url,
        uses_pkce: form.uses_pkce,
        ...secret,
        ...pkce,
      };
      if (template) {
        const params =
          Object.keys(template.params).length > 0 ? { template_params: form.template_params } : {};
        await unwrap(
          api.POST("/v2/auth/providers", {
            body: {
              provider_id: form.provider_id,
              client_id: form.client_id,
              template: template.id,
              ...(form.name === "" ? {} : { name: form.name }),
              ...secret,
              ...params,
            },
          }),
        );
        done(`Added provider ${form.provider_id} from the ${template.name} template.`);
      } else if (editing) {
        await unwrap(
          api.PATCH("/v2/auth/providers/{provider_id}", {
            params: { path: { provider_id: editing.provider_id } },
            body: common,
          }),
        );
        done(`Saved provider ${editing.provider_id}.`);
      } else {
        await unwrap(
          api.POST("/v2/auth/providers", {
            body: {
              ...common,
              provider_id: form.provider_id,
              token_endpoint_auth_method: form.token_endpoint_auth_method,
            },
          }),
        );
        done(`Added provider ${form.provider_id}.`);
      }
    });
  return (
    <form
      ref={ref}
      class="form"
      aria-label={editing ? `Edit provider ${editing.provider_id}` : "Add a provider"}
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <h3>{editing ? `Edit ${editing.provider_id}` : "Add a provider"}</h3>
      {!editing && catalog.data && (
        <TemplatePicker
          templates={catalog.data}
          value={form.template}
          onPick={(id) => set({ template: id, template_params: {} })}
        />
      )}
      {text("provider_id", "Provider id (used in paths)")}
      {text("name", "Name")}
      {text("client_id", "Client id")}
      <label>
        Client secret
        <input
          name="client_secret"
          type="password"
          autocomplete="off"
          value={form.client_secret}
          placeholder={editing?.has_client_secret ? "stored: leave empty to keep it" : "none (public client)"}
          onInput={(e) => set({ client_secret: e.currentTarget.value })}
        />
      </label>
      {template ? (
        <TemplateFields
          template={template}
          values={form.template_params}
          onChange={(v) => set({ template_params: v })}
        />
      ) : (
        <ManualFields form={form} set={set} text={text} editing={editing !== undefined} />
      )}
      <CallbackUrl providerId={form.provider_id} />
      <div class="toolbar">
        <button type="submit" class="primary" disabled={action.busy}>
          {editing ? "Save provider" : "Add provider"}
        </button>
        {editing && (
          <button type="button" onClick={() => done("")}>
            Cancel
          </button>
        )}
      </div>
      <ErrorBox error={action.error} />
    </form>
  );
}

/** The URLs, PKCE and auth method, entered by hand (no template). */
function ManualFields({
  form,
  set,
  text,
  editing,
}: {
  form: Form;
  set: (patch: Partial<Form>) => void;
  text: (k: "auth_url" | "token_url", label: string) => JSX.Element;
  editing: boolean;
}) {
  return (
    <>
      {text("auth_url", "Authorization URL")}
      {text("token_url", "Token URL")}
      <label class="inline">
        <input
          type="checkbox"
          name="uses_pkce"
          checked={form.uses_pkce}
          onChange={(e) => set({ uses_pkce: e.currentTarget.checked })}
        />{" "}
        Use PKCE
      </label>
      <label>
        PKCE code challenge method
        <select
          name="code_challenge_method"
          value={form.code_challenge_method}
          disabled={!form.uses_pkce}
          onChange={(e) =>
            set({ code_challenge_method: e.currentTarget.value === "plain" ? "plain" : "S256" })
          }
        >
          <option value="S256">S256</option>
          <option value="plain">plain (only if the server allows it)</option>
        </select>
      </label>
      <label>
        Token endpoint auth method
        <select
          name="token_endpoint_auth_method"
          value={form.token_endpoint_auth_method}
          disabled={editing}
          onChange={(e) => set({ token_endpoint_auth_method: asAuthMethod(e.currentTarget.value) })}
        >
          {AUTH_METHODS.map((m) => (
            <option value={m}>{m}</option>
          ))}
        </select>
        {editing && (
          <small class="muted">Set when the provider is added (the API's PATCH does not change it).</small>
        )}
      </label>
    </>
  );
}
