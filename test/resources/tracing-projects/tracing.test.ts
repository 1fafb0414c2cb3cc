import assert from "node:assert/strict";
import { before, it } from "node:test";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, type Deployment, locs } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Project {
  id: string;
  name: string;
  tenant_id: string;
  deployment_id: string | null;
  created_at: string;
}

/** The tracing project record: `{id, name, tenant_id, deployment_id|null, created_at}`. */
const projectSchema = {
  type: "object",
  required: ["id", "name", "tenant_id", "deployment_id", "created_at"],
  additionalProperties: false,
  properties: {
    id: { type: "string", format: "uuid" },
    name: { type: "string" },
    tenant_id: { type: "string", format: "uuid" },
    deployment_id: { anyOf: [{ type: "string", format: "uuid" }, { type: "null" }] },
    created_at: { type: "string", format: "date-time" },
  },
};
const ajv = new Ajv.default({ strict: true });
addFormats.default(ajv);
const validProject = ajv.compile(projectSchema);

forEachDatabase("tracing projects", (suite) => {
  let web: Deployment;
  let project: Project;
  let otherProject: Project;

  let listedWeb: Project[];

  before(async () => {
    const ctx = suite.ctx;
    web = await createDocker(ctx, { name: "web" });
    await createDocker(ctx, { name: "web-admin" });
    const res = await call<Project[]>(ctx, "GET", "/v1/tracing-projects?name=web");
    assert.equal(res.status, 200);
    listedWeb = res.body;
    project = res.body[0] as Project;
    await createDocker(ctx, { name: "web" }, { key: ctx.other.admin });
    otherProject = (
      await call<Project[]>(ctx, "GET", "/v1/tracing-projects?name=web", undefined, { key: ctx.other.admin })
    ).body[0] as Project;
  });

  it("each deployment brings its tracing project", () => {
    const ctx = suite.ctx;
    assert.equal(listedWeb.length, 1, "exact name, not a substring");
    assert.ok(validProject(project), JSON.stringify(validProject.errors));
    assert.equal(project.name, "web");
    assert.equal(project.deployment_id, web.id);
    assert.equal(project.tenant_id, ctx.workspaceId);
    assert.notEqual(otherProject.id, project.id);
  });

  authMatrix(suite, { method: "GET", url: () => "/v1/tracing-projects", workspace: true });
  authMatrix(suite, {
    method: "GET",
    url: () => `/v1/tracing-projects/${project.id}`,
    workspace: true,
    otherTenantUrl: () => `/v1/tracing-projects/${otherProject.id}`,
  });

  it("list: newest first, limit and offset with bounds; only this workspace's", async () => {
    const ctx = suite.ctx;
    const all = await call<Project[]>(ctx, "GET", "/v1/tracing-projects");
    assert.deepEqual(
      all.body.map((p) => p.name),
      ["web-admin", "web"],
    );
    assert.ok(all.body.every((p) => validProject(p)));
    assert.deepEqual(
      (await call<Project[]>(ctx, "GET", "/v1/tracing-projects?limit=1&offset=1")).body.map((p) => p.name),
      ["web"],
    );
    for (const q of ["limit=0", "limit=101", "offset=-1"]) {
      assert.equal((await call(ctx, "GET", `/v1/tracing-projects?${q}`)).status, 422, q);
    }
    assert.deepEqual(locs(await call(ctx, "GET", "/v1/tracing-projects?name=")), ["query.name"]);
    assert.deepEqual((await call(ctx, "GET", "/v1/tracing-projects?name=nothing")).body, []);
    const ws2 = await call<Project[]>(ctx, "GET", "/v1/tracing-projects", undefined, {
      key: ctx.keys.boundMember,
    });
    assert.deepEqual(ws2.body, []);
  });

  it("get: the record; another workspace's is a 404", async () => {
    const ctx = suite.ctx;
    const res = await call<Project>(ctx, "GET", `/v1/tracing-projects/${project.id}`, undefined, {
      key: ctx.keys.viewer,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, project);
    const ws2 = await call(ctx, "GET", `/v1/tracing-projects/${project.id}`, undefined, {
      key: ctx.keys.boundMember,
    });
    assert.equal(ws2.status, 404);
    assert.equal(
      (await call(ctx, "GET", "/v1/tracing-projects/6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e")).status,
      404,
    );
    assert.deepEqual(locs(await call(ctx, "GET", "/v1/tracing-projects/x")), ["path.id"]);
  });
});
