import { Type } from "@sinclair/typebox";
import type { App } from "../../http/types.ts";
import { listTemplates } from "../../templates/catalog.ts";

const TemplateRecord = Type.Object({
  name: Type.String({
    description: "Use as `source_revision_config.repo_ref` of an internal_template deployment.",
  }),
  description: Type.String(),
});

export async function templateRoutes(app: App): Promise<void> {
  app.get(
    "/v2/templates",
    {
      schema: {
        tags: ["templates"],
        summary: "List the built-in templates that internal_template deployments run",
        response: { 200: Type.Array(TemplateRecord) },
      },
    },
    async () => listTemplates().map((t) => ({ name: t.name, description: t.description })),
  );
}
