import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** A built-in app that `internal_template` deployments run; `path` is its source directory. */
export interface Template {
  name: string;
  description: string;
  path: string;
}

/** templates/ at the repository root: two levels up from both src/templates and dist/templates. */
const TEMPLATES_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "templates");

const CATALOG: readonly Template[] = [
  {
    name: "hello-http",
    description: "A minimal Node.js HTTP app without dependencies: listens on $PORT and answers / with JSON.",
    path: join(TEMPLATES_DIR, "hello-http"),
  },
];

export function listTemplates(): Template[] {
  return CATALOG.map((t) => ({ ...t }));
}

export function findTemplate(name: string): Template | undefined {
  const found = CATALOG.find((t) => t.name === name);
  return found ? { ...found } : undefined;
}
