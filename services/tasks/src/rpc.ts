import { callerOf, type Task, taskEtag, type tasksRpc } from "@tasksvc/contracts";
import type { HandlerMeta, Handlers } from "@tasksvc/nats";
import type { AttachmentsService } from "./domain/attachments.js";
import { taskBatches } from "./domain/batches.js";
import { eventReplay } from "./domain/event-replay.js";
import type { Repositories } from "./repo/repositories.js";
import type { TasksService } from "./domain/tasks-service.js";

/** An answer that is one task, its ETag in the reply's headers: the gateway sends both without parsing the task. */
function tagged(meta: HandlerMeta, task: Task): Task {
  meta.headers.etag = taskEtag(task.version);
  return task;
}

/** Entry layer: maps each RPC operation of the catalog onto the domain. */
export function tasksHandlers(svc: TasksService, att: AttachmentsService, repos: Repositories, replyBytes: number): Handlers<typeof tasksRpc> {
  const batches = taskBatches(svc, replyBytes);
  const replay = eventReplay(repos);
  return {
    createTask: async (i, ctx, meta) => tagged(meta, await svc.createTask(callerOf(ctx), i)),
    listTasks: (i, ctx) => svc.listTasks(callerOf(ctx), i),
    searchTasks: (i, ctx) => svc.searchTasks(callerOf(ctx), i),
    getTask: async (i, ctx, meta) => tagged(meta, await svc.getTask(callerOf(ctx), i.task_id)),
    updateTask: async (i, ctx, meta) => tagged(meta, await svc.updateTask(callerOf(ctx), i.task_id, i.patch)),
    archiveTask: async (i, ctx, meta) => tagged(meta, await svc.setArchived(callerOf(ctx), i.task_id, true)),
    unarchiveTask: async (i, ctx, meta) => tagged(meta, await svc.setArchived(callerOf(ctx), i.task_id, false)),
    batchTasks: (i, ctx) => batches.run(callerOf(ctx), i),
    taskHistory: (i, ctx) => svc.history(callerOf(ctx), i.task_id, i.limit, i.after),
    listEvents: (i, ctx) => svc.listEvents(callerOf(ctx), i),
    getEvent: (i, ctx) => svc.getEvent(callerOf(ctx), i.event_id, i.visible),
    replayEvents: (i, ctx) => replay(callerOf(ctx), i),
    getDependencies: (i, ctx) => svc.dependencies(callerOf(ctx), i.task_id),
    addDependency: (i, ctx) => svc.addDependency(callerOf(ctx), i.task_id, i.blocker_task_id),
    removeDependency: (i, ctx) => svc.removeDependency(callerOf(ctx), i.task_id, i.blocker_task_id),
    createProject: (i, ctx) => svc.createProject(callerOf(ctx), i),
    listProjects: (i, ctx) => svc.listProjects(callerOf(ctx), i.limit, i.after),
    getProject: (i, ctx) => svc.getProject(callerOf(ctx), i.project_id),
    updateProject: (i, ctx) => svc.updateProject(callerOf(ctx), i.project_id, i.patch),
    deleteProject: (i, ctx) => svc.deleteProject(callerOf(ctx), i.project_id),
    lookupTasks: (i, ctx) => svc.lookupTasks(callerOf(ctx), i.numbers),
    taskWithSubtasks: (i, ctx) => svc.taskWithSubtasks(callerOf(ctx), i.number),
    startUpload: ({ task_id, limits, ...body }, ctx) => att.startUpload(callerOf(ctx), task_id, body, limits),
    registerAttachment: ({ task_id, ...body }, ctx) => att.registerAttachment(callerOf(ctx), task_id, body),
    listAttachments: (i, ctx) => att.listAttachments(callerOf(ctx), i.task_id, i.limit, i.after),
    downloadAttachment: (i, ctx) => att.downloadAttachment(callerOf(ctx), i.task_id, i.attachment_id),
    deleteAttachment: (i, ctx) => att.deleteAttachment(callerOf(ctx), i.task_id, i.attachment_id),
    // The gateway's streaming routes: the capability is the authorization (no caller needed).
    claimUpload: (i) => att.claimUpload(i.capability),
    releaseUpload: (i, ctx) => att.releaseUpload(i.file_key, ctx.organization_id),
    completeUpload: (i, ctx) => att.completeUpload(i.file_key, ctx.organization_id),
    openDownload: (i) => att.openDownload(i.capability),
    storageUsage: (_i, ctx) => att.storageUsage(callerOf(ctx)),
  };
}
