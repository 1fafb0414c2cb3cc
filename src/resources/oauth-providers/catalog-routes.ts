import { Type } from "@sinclair/typebox";
import { notFound } from "../../core/errors.ts";
import type { App } from "../../http/types.ts";
import { CATALOG, findTemplate, TemplateSchema } from "../../oauth/catalog.ts";

const tags = ["oauth-providers"];

/** The provider catalog: templates that `POST /v2/auth/providers {template}` fills a provider from. */
export async function oauthCatalogRoutes(app: App): Promise<void> {
  app.get(
    "/v2/auth/catalog",
    {
      schema: {
        tags,
        summary: "List the provider templates of the catalog (by id)",
        description:
          "Each template's URLs, default scopes, PKCE and token endpoint auth method, the placeholders " +
          "its URLs take (`params`, given as `template_params`), its quirks, and the page of the " +
          "provider's documentation they come from.",
        response: { 200: Type.Array(TemplateSchema) },
      },
    },
    async () => [...CATALOG],
  );

  app.get(
    "/v2/auth/catalog/:template",
    {
      schema: {
        tags,
        summary: "Read one provider template",
        params: Type.Object({ template: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: TemplateSchema },
      },
    },
    async (request) => {
      const t = findTemplate(request.params.template);
      if (!t) throw notFound(`No template "${request.params.template}" in the catalog.`);
      return t;
    },
  );
}
