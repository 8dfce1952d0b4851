import { z } from "zod";
import { attachmentOps } from "./attachments.js";
import { commentOps } from "./comments.js";
import { exportOps } from "./exports.js";
import { importOps } from "./imports.js";
import { OpaqueId, PageQuery, page } from "./common.js";
import { AddDependencyBody, DependencyParams, DependencyView } from "./dependencies.js";
import { CreateCustomFieldBody, CustomField, CustomFieldParams, DeletedCustomField, UpdateCustomFieldBody } from "./custom-fields.js";
import { CreateLabelBody, DeletedLabel, LabelParams, TaskLabel, UpdateLabelBody } from "./labels.js";
import { CreateProjectBody, DeletedProject, Project, ProjectParams, UpdateProjectBody } from "./projects.js";
import type { RpcCatalog } from "./rpc.js";
import { ReplayEventsInput, ReplayEventsOutput } from "./event-stream.js";
import { TaskBatchOutcome, TaskBatchRpcInput } from "./task-batches.js";
import { ListTasksQuery, SearchTasksBody } from "./task-search.js";
import { Event } from "./events.js";
import { Follower, FollowerParams, ListFollowersInput, UnfollowedTask } from "./followers.js";
import { EventType } from "./event-types.js";
import { trashOps } from "./trash.js";
import { GetTaskQuery, rewindOps } from "./rewinds.js";
import { TaskVersion } from "./task-versions.js";
import { CreateTaskBody, EventParams, ListEventsQuery, Task, TaskParams, TaskSummary, UpdateTaskBody } from "./tasks.js";

const Upserted = <T extends z.ZodType>(t: T) => z.object({ created: z.boolean(), view: t });

export const tasksRpc = {
  service: "tasks",
  ops: {
    createTask: { input: CreateTaskBody, output: Task },
    listTasks: { input: ListTasksQuery, output: page(Task) },
    searchTasks: { input: SearchTasksBody, output: page(Task) },
    getTask: { input: TaskParams.extend(GetTaskQuery.shape), output: Task },
    updateTask: { input: z.object({ task_id: OpaqueId, patch: UpdateTaskBody }), output: Task },
    archiveTask: { input: TaskParams, output: Task },
    unarchiveTask: { input: TaskParams, output: Task },
    batchTasks: { input: TaskBatchRpcInput, output: z.object({ results: z.array(TaskBatchOutcome) }), timeoutMs: 30_000 },
    taskHistory: { input: PageQuery.extend({ task_id: OpaqueId }), output: page(TaskVersion) },
    // `visible`: the types the caller may see (from its scopes); all when absent.
    listEvents: { input: ListEventsQuery.extend({ visible: z.array(EventType).optional() }), output: page(Event) },
    getEvent: { input: EventParams.extend({ visible: z.array(EventType).optional() }), output: Event },
    replayEvents: { input: ReplayEventsInput, output: ReplayEventsOutput },
    listFollowers: { input: ListFollowersInput, output: page(Follower) },
    followTask: { input: FollowerParams, output: Follower },
    unfollowTask: { input: FollowerParams, output: UnfollowedTask },
    getDependencies: { input: TaskParams, output: DependencyView },
    addDependency: { input: AddDependencyBody.extend({ task_id: OpaqueId }), output: Upserted(DependencyView) },
    removeDependency: { input: DependencyParams, output: DependencyView },
    createProject: { input: CreateProjectBody, output: Project },
    listProjects: { input: PageQuery, output: page(Project) },
    getProject: { input: ProjectParams, output: Project },
    updateProject: { input: z.object({ project_id: OpaqueId, patch: UpdateProjectBody }), output: Project },
    deleteProject: { input: ProjectParams, output: DeletedProject },
    createLabel: { input: CreateLabelBody, output: TaskLabel },
    listLabels: { input: PageQuery, output: page(TaskLabel) },
    getLabel: { input: LabelParams, output: TaskLabel },
    updateLabel: { input: z.object({ label_id: OpaqueId, patch: UpdateLabelBody }), output: TaskLabel },
    deleteLabel: { input: LabelParams, output: DeletedLabel },
    createCustomField: { input: CreateCustomFieldBody, output: CustomField },
    listCustomFields: { input: PageQuery, output: page(CustomField) },
    getCustomField: { input: CustomFieldParams, output: CustomField },
    updateCustomField: { input: z.object({ field_id: OpaqueId, patch: UpdateCustomFieldBody }), output: CustomField },
    deleteCustomField: { input: CustomFieldParams, output: DeletedCustomField },
    // Internal (boards service): unknown numbers are simply absent.
    lookupTasks: { input: z.object({ numbers: z.array(z.number().int().positive()).max(1000) }), output: z.object({ tasks: z.array(TaskSummary) }) },
    taskWithSubtasks: {
      // owner_user_id and not archived pick the subtasks a board can hold; limit bounds the reply.
      // owner_user_id: subtasks that user owns or is assigned to.
      input: z.object({ number: z.number().int().positive(), owner_user_id: z.string().optional(), limit: z.number().int().positive().max(1000).optional() }),
      output: z.object({ task: TaskSummary.nullable(), subtasks: z.array(TaskSummary) }),
    },
    // Internal (notifications service): a task's followers, asked as the system for an event's organization.
    followersOf: {
      input: PageQuery.extend({ organization_id: OpaqueId, task_number: z.number().int().positive() }),
      output: page(Follower),
    },
    ...attachmentOps,
    ...commentOps,
    ...trashOps,
    ...exportOps,
    ...importOps,
    ...rewindOps,
  },
} as const satisfies RpcCatalog;
