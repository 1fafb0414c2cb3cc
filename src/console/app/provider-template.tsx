// The provider catalog in the add-provider form: pick a template, give its URL placeholders, and
// the server fills in the URLs, PKCE, auth method and quirks (docs/oauth.md).
import type { Session } from "./session.ts";
import { ExternalLink, useLoad } from "./ui.tsx";

export interface CatalogTemplate {
  id: string;
  name: string;
  docs_url: string;
  auth_url: string;
  params: Record<string, { description: string; pattern: string }>;
  quirks: { notes: string[] };
}

export function useCatalog(session: Session) {
  // `raw`: a plain list; the page needs only a few of its fields.
  return useLoad(() => session.client.raw<CatalogTemplate[]>("GET", "/v2/auth/catalog"), []);
}

export function TemplatePicker({
  templates,
  value,
  onPick,
}: {
  templates: CatalogTemplate[];
  value: string;
  onPick: (id: string) => void;
}) {
  return (
    <label>
      Start from a template
      <select name="template" value={value} onChange={(e) => onPick(e.currentTarget.value)}>
        <option value="">None: enter the URLs yourself</option>
        {templates.map((t) => (
          <option value={t.id}>{t.name}</option>
        ))}
      </select>
    </label>
  );
}

/** The template's placeholders (Microsoft's tenant, …), its documentation page and its notes. */
export function TemplateFields({
  template,
  values,
  onChange,
}: {
  template: CatalogTemplate;
  values: Record<string, string>;
  onChange: (values: Record<string, string>) => void;
}) {
  return (
    <div class="template" data-template={template.id}>
      {Object.entries(template.params).map(([name, spec]) => (
        <label>
          {name}
          <input
            name={`param-${name}`}
            required
            pattern={spec.pattern.replace(/^\^|\$$/g, "")}
            value={values[name] ?? ""}
            onInput={(e) => onChange({ ...values, [name]: e.currentTarget.value })}
          />
          <small class="muted">{spec.description}</small>
        </label>
      ))}
      <p class="muted">
        URLs, scopes, PKCE and the token endpoint auth method come from{" "}
        <ExternalLink href={template.docs_url} />.
      </p>
      {template.quirks.notes.length > 0 && (
        <ul class="muted">
          {template.quirks.notes.map((n) => (
            <li>{n}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
