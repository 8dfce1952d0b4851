import { CreateProjectBody, PageQuery, Project, ProjectParams, UpdateProjectBody, page } from "@tasksvc/contracts";
import { z } from "zod";
import { resource } from "../operations.js";

export const projects = resource("projects", (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/projects",
      operationId: "createProject",
      summary: "Create a project (name unique in the organization)",
      scope: "projects:write",
      body: CreateProjectBody,
      status: 201,
      response: Project,
      idempotent: true,
      serviceIdempotency: true,
    },
    ({ clients, body, ctx }) => clients.tasks.relay("createProject", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/projects",
      operationId: "listProjects",
      summary: "List projects, newest first",
      scope: "projects:read",
      query: PageQuery.strict(),
      response: page(Project),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.tasks.relay("listProjects", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/projects/:project_id",
      operationId: "getProject",
      summary: "Get a project",
      scope: "projects:read",
      params: ProjectParams,
      response: Project,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("getProject", params, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/projects/:project_id",
      operationId: "updateProject",
      summary: "Update a project's name or description",
      scope: "projects:write",
      params: ProjectParams,
      body: UpdateProjectBody,
      response: Project,
    },
    ({ clients, params, body, ctx }) => clients.tasks.relay("updateProject", { project_id: params.project_id, patch: body }, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/projects/:project_id",
      operationId: "deleteProject",
      summary: "Delete a project; tasks keep their other projects (emits task.updated for each task it leaves)",
      scope: "projects:write",
      params: ProjectParams,
      response: z.object({ id: z.string(), deleted: z.literal(true) }),
    },
    ({ clients, params, ctx }) => clients.tasks.relay("deleteProject", params, ctx),
  );
});
