export { service, TasksConfig } from "./service.js";
// For the bench, which measures the scheduler against its own schema without the rest of the service.
export { MIGRATIONS_DIR } from "./service.js";
export { TASK_INDEXES } from "./repo/indexes.js";
export { tasksResources } from "./domain/resources.js";
export { recurrenceSystem } from "./domain/recurrence/system.js";
export { tasksSystem } from "./domain/tasks.js";
// For the bench's matched baselines, which run the service's own statements with none of its pipeline.
export { tasksRepo } from "./repo/tasks-repo.js";
export { taskSearch } from "./repo/task-search.js";
export { customFieldsRepo } from "./repo/custom-fields-repo.js";
export { removalsRepo } from "./repo/removals-repo.js";
