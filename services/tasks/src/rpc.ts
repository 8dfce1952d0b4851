import { callerOf, type Task, taskEtag, type tasksRpc } from "@tasksvc/contracts";
import type { HandlerMeta, Handlers } from "@tasksvc/nats";
import { claimedKind } from "./domain/attachments/capabilities.js";
import type { AttachmentsSystem } from "./domain/attachments/system.js";
import type { CommentsSystem } from "./domain/comments.js";
import type { TaskBatches } from "./domain/batches.js";
import type { CustomFieldsSystem } from "./domain/custom-fields.js";
import type { DependenciesSystem } from "./domain/dependencies.js";
import type { EventsSystem } from "./domain/events/system.js";
import type { ExportsSystem } from "./domain/exports/system.js";
import type { FollowersSystem } from "./domain/followers.js";
import type { ImportsSystem } from "./domain/imports/system.js";
import type { LabelsSystem } from "./domain/labels.js";
import type { ProjectsSystem } from "./domain/projects.js";
import type { RewindsSystem } from "./domain/rewinds.js";
import type { TasksSystem } from "./domain/tasks.js";
import type { TrashSystem } from "./domain/trash.js";

export interface TasksSystems {
  tasks: TasksSystem;
  batches: TaskBatches;
  projects: ProjectsSystem;
  labels: LabelsSystem;
  customFields: CustomFieldsSystem;
  dependencies: DependenciesSystem;
  events: EventsSystem;
  attachments: AttachmentsSystem;
  followers: FollowersSystem;
  comments: CommentsSystem;
  trash: TrashSystem;
  exports: ExportsSystem;
  imports: ImportsSystem;
  rewinds: RewindsSystem;
}

/** The ETag travels in the reply's headers, so the gateway sends both without parsing the task. */
function tagged(meta: HandlerMeta, task: Task): Task {
  meta.headers.etag = taskEtag(task.version);
  return task;
}

export function tasksHandlers({
  tasks,
  batches,
  projects,
  labels,
  customFields,
  dependencies,
  events,
  attachments: att,
  followers,
  comments,
  trash,
  exports,
  imports,
  rewinds,
}: TasksSystems): Handlers<typeof tasksRpc> {
  return {
    createTask: async (i, ctx, meta) => tagged(meta, await tasks.createTask(callerOf(ctx), i)),
    listTasks: (i, ctx) => tasks.listTasks(callerOf(ctx), i),
    searchTasks: (i, ctx) => tasks.searchTasks(callerOf(ctx), i),
    getTask: async (i, ctx, meta) => tagged(meta, await tasks.getTask(callerOf(ctx), i.task_id, i.as_of)),
    updateTask: async (i, ctx, meta) => tagged(meta, await tasks.updateTask(callerOf(ctx), i.task_id, i.patch)),
    archiveTask: async (i, ctx, meta) => tagged(meta, await tasks.setArchived(callerOf(ctx), i.task_id, true)),
    unarchiveTask: async (i, ctx, meta) => tagged(meta, await tasks.setArchived(callerOf(ctx), i.task_id, false)),
    batchTasks: (i, ctx) => batches.run(callerOf(ctx), i),
    taskHistory: (i, ctx) => tasks.history(callerOf(ctx), i.task_id, i.limit, i.after),
    lookupTasks: (i, ctx) => tasks.lookupTasks(callerOf(ctx), i.numbers),
    taskWithSubtasks: (i, ctx) => tasks.taskWithSubtasks(callerOf(ctx), i.number, { owner: i.owner_user_id, limit: i.limit }),
    listEvents: (i, ctx) => events.listEvents(callerOf(ctx), i),
    getEvent: (i, ctx) => events.getEvent(callerOf(ctx), i.event_id, i.visible),
    replayEvents: (i, ctx) => events.replayEvents(callerOf(ctx), i),
    listFollowers: (i, ctx) => followers.list(callerOf(ctx), i.task_id, i.limit, i.after),
    followTask: (i, ctx) => followers.follow(callerOf(ctx), i.task_id, i.user_id),
    unfollowTask: (i, ctx) => followers.unfollow(callerOf(ctx), i.task_id, i.user_id),
    followersOf: (i) => followers.followersOf(i.organization_id, i.task_number, i.limit, i.after),
    createComment: (i, ctx) => comments.create(callerOf(ctx), i.task_id, i.body),
    listComments: (i, ctx) => comments.list(callerOf(ctx), i.task_id, i.limit, i.after),
    getComment: (i, ctx) => comments.get(callerOf(ctx), i.task_id, i.comment_id),
    updateComment: (i, ctx) => comments.update(callerOf(ctx), i.task_id, i.comment_id, i.patch.body),
    deleteComment: (i, ctx) => comments.remove(callerOf(ctx), i.task_id, i.comment_id),
    getDependencies: (i, ctx) => dependencies.dependencies(callerOf(ctx), i.task_id),
    addDependency: (i, ctx) => dependencies.addDependency(callerOf(ctx), i.task_id, i.blocker_task_id),
    removeDependency: (i, ctx) => dependencies.removeDependency(callerOf(ctx), i.task_id, i.blocker_task_id),
    createProject: (i, ctx) => projects.createProject(callerOf(ctx), i),
    listProjects: (i, ctx) => projects.listProjects(callerOf(ctx), i.limit, i.after),
    getProject: (i, ctx) => projects.getProject(callerOf(ctx), i.project_id),
    updateProject: (i, ctx) => projects.updateProject(callerOf(ctx), i.project_id, i.patch),
    deleteProject: (i, ctx) => projects.deleteProject(callerOf(ctx), i.project_id),
    createLabel: (i, ctx) => labels.createLabel(callerOf(ctx), i),
    listLabels: (i, ctx) => labels.listLabels(callerOf(ctx), i.limit, i.after),
    getLabel: (i, ctx) => labels.getLabel(callerOf(ctx), i.label_id),
    updateLabel: (i, ctx) => labels.updateLabel(callerOf(ctx), i.label_id, i.patch),
    deleteLabel: (i, ctx) => labels.deleteLabel(callerOf(ctx), i.label_id),
    createCustomField: (i, ctx) => customFields.createCustomField(callerOf(ctx), i),
    listCustomFields: (i, ctx) => customFields.listCustomFields(callerOf(ctx), i.limit, i.after),
    getCustomField: (i, ctx) => customFields.getCustomField(callerOf(ctx), i.field_id),
    updateCustomField: (i, ctx) => customFields.updateCustomField(callerOf(ctx), i.field_id, i.patch),
    deleteCustomField: (i, ctx) => customFields.deleteCustomField(callerOf(ctx), i.field_id),
    startUpload: ({ task_id, limits, ...body }, ctx) => att.startUpload(callerOf(ctx), task_id, body, limits),
    registerAttachment: ({ task_id, ...body }, ctx) => att.registerAttachment(callerOf(ctx), task_id, body),
    listAttachments: (i, ctx) => att.listAttachments(callerOf(ctx), i.task_id, i.limit, i.after),
    downloadAttachment: (i, ctx) => att.downloadAttachment(callerOf(ctx), i.task_id, i.attachment_id),
    deleteAttachment: (i, ctx) => att.deleteAttachment(callerOf(ctx), i.task_id, i.attachment_id),
    // The capability is the authorization: no caller needed.
    claimUpload: (i) => att.claimUpload(i.capability),
    releaseUpload: (i, ctx) => att.releaseUpload(i.file_key, ctx.organization_id),
    completeUpload: (i, ctx) => att.completeUpload(i.file_key, ctx.organization_id),
    // One route serves every file a link names; the link says whose it is, and that system verifies it.
    openDownload: (i) => (claimedKind(i.capability) === "export" ? exports.openDownload(i.capability) : att.openDownload(i.capability)),
    storageUsage: (_i, ctx) => att.storageUsage(callerOf(ctx)),
    deleteTask: (i, ctx) => trash.deleteTask(callerOf(ctx), i.task_id),
    restoreTask: async (i, ctx, meta) => tagged(meta, await trash.restoreTask(callerOf(ctx), i.task_id)),
    listTrash: (i, ctx) => trash.listTrash(callerOf(ctx), i.limit, i.after),
    purgeTask: (i, ctx) => trash.purgeTask(callerOf(ctx), i.task_id),
    createExport: (i, ctx) => exports.create(callerOf(ctx), i),
    getExport: (i, ctx) => exports.get(callerOf(ctx), i.export_id),
    listExports: (i, ctx) => exports.list(callerOf(ctx), i.limit, i.after),
    startImportUpload: (i, ctx) => imports.startUpload(callerOf(ctx), i),
    createImport: (i, ctx) => imports.createImport(callerOf(ctx), i),
    getImport: (i, ctx) => imports.getImport(callerOf(ctx), i.import_id),
    listImports: (i, ctx) => imports.listImports(callerOf(ctx), i.limit, i.after),
    createRewind: (i, ctx) => rewinds.create(callerOf(ctx), i),
    getRewind: (i, ctx) => rewinds.get(callerOf(ctx), i.rewind_id),
  };
}
