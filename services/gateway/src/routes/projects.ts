import { CreateProjectBody, DeletedProject, PageQuery, Project, ProjectParams, UpdateProjectBody, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const projects = resource({ name: "projects", scopes: "projects" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/projects",
      operationId: "createProject",
      summary: "Create a project (name unique in the organization)",
      body: CreateProjectBody,
      status: 201,
      location: "/v1/projects/{id}",
      response: Project,
      idempotent: true,
    },
    ({ clients, body, ctx }) => clients.tasks.relay("createProject", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/projects",
      operationId: "listProjects",
      summary: "List projects, newest first",
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
      params: ProjectParams,
      response: DeletedProject,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("deleteProject", params, ctx),
  );
});
