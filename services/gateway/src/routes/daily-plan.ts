import { Board, BoardEntry, DateQuery, DeletedEntry, EntryParams, PlanEntryBody, SectionStatus, SetSectionStatusBody } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const dailyPlan = resource({ name: "daily-plan", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/daily-plan",
      operationId: "getDailyPlan",
      summary: "The credential's user's board for a UTC day: TODO then PROGRESS, entries oldest first, current titles and statuses",
      query: DateQuery,
      response: Board,
    },
    ({ clients, query, ctx }) => clients.boards.relay("getBoard", query, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/daily-plan",
      operationId: "setDailyPlanSection",
      summary: "Set a section's fill status for a day (creates the section when needed)",
      query: DateQuery,
      body: SetSectionStatusBody,
      response: SectionStatus,
    },
    ({ clients, query, body, ctx }) => clients.boards.relay("setSectionStatus", { ...body, date: query.date }, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/daily-plan/entries",
      operationId: "addDailyPlanEntry",
      summary: "Place one of your tasks (and its subtasks) on a section of a day; moves it from the other section",
      body: PlanEntryBody,
      status: 201,
      location: "/v1/daily-plan/entries/{id}",
      response: BoardEntry,
      idempotent: true,
      errors: ["resource_not_found", "limit_reached"],
    },
    ({ clients, body, ctx }) => clients.boards.relay("planEntry", body, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/daily-plan/entries/:entry_id",
      operationId: "removeDailyPlanEntry",
      summary: "Remove an entry from your board",
      params: EntryParams,
      response: DeletedEntry,
    },
    ({ clients, params, ctx }) => clients.boards.relay("deleteEntry", params, ctx),
  );
});
