// The matched baselines' responder: for each scenario, the same SQL statement(s) the service runs,
// called through the service's own repository (so the SQL is the service's, never a copy that
// drifts) with the same driver options, on the same database, answered over one NATS
// request/reply. No RPC framework, validation, authentication, idempotency claim, rate limit,
// metrics or tracing: what is left when a request does only the I/O its answer needs.
// Writes go to copies of the keys and tasks schemas, made by the services' own migrations
// (triggers and indexes included), so they do the same I/O without feeding the stack's relay.
import { randomUUID } from "node:crypto";
import { MAX_LIVE_API_KEYS } from "@tasksvc/contracts";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { createDb, migrate, POOL_OPTIONS } from "@tasksvc/db";
import { boardsRepo } from "@tasksvc/boards";
import { MIGRATIONS_DIR as KEYS_MIGRATIONS, keysRepo } from "@tasksvc/keys";
import { customFieldsRepo, MIGRATIONS_DIR as TASKS_MIGRATIONS, removalsRepo, TASK_INDEXES, taskSearch, tasksRepo } from "@tasksvc/tasks";

const { DATABASE_URL, NATS_URL, NATS_NAMESPACE } = process.env;
const { org, user, taskNumber, boardDay } = JSON.parse(process.env.MATCHED);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

// Copies for the writes: the services' migrations in schemas of their own.
await migrate({ url: DATABASE_URL, schema: "matched_keys", dir: KEYS_MIGRATIONS, log: quiet });
await migrate({ url: DATABASE_URL, schema: "matched_tasks", dir: TASKS_MIGRATIONS, log: quiet, indexes: TASK_INDEXES });

// One pool per schema, each of the size a service's autocommit pool has (10 - 3 for transactions),
// named like the service's connections.
const pool = (schema) =>
  postgres(DATABASE_URL, {
    ...POOL_OPTIONS,
    max: 7,
    onnotice: () => {},
    connection: { search_path: schema, application_name: `tasksvc-${schema}-matched`, TimeZone: "UTC" },
  });
const keysSql = pool("keys");
const tasksSql = pool("tasks");
const boardsSql = pool("boards");
const keysCopy = pool("matched_keys");
const tasksCopy = pool("matched_tasks");
// The caller's organization, user and membership, for the mint's role check.
await keysCopy`insert into organizations select * from keys.organizations where id = ${org} on conflict do nothing`;
await keysCopy`insert into users select * from keys.users where id = ${user} on conflict do nothing`;
await keysCopy`insert into memberships select * from keys.memberships where organization_id = ${org} and user_id = ${user} on conflict do nothing`;
// The organization's labels and custom field definitions (none unless the bench defined them), for the create that carries them.
await tasksCopy`insert into labels select * from tasks.labels where organization_id = ${org} on conflict do nothing`;
await tasksCopy`insert into custom_fields select * from tasks.custom_fields where organization_id = ${org} on conflict do nothing`;

// The mint runs in a transaction as the service's does (its organization's lock, then the mint),
// on a transaction connection of the service's own kind.
const keysCopyDb = createDb({ url: DATABASE_URL, schema: "matched_keys", statementTimeoutMs: 5000 });
const keys = keysRepo(keysSql);
const tasks = tasksRepo(tasksSql);
const search = taskSearch(tasksSql);
const boards = boardsRepo(boardsSql);
const create = tasksRepo(tasksCopy);
const labelLocks = removalsRepo(tasksCopy);
const definitions = customFieldsRepo(tasksCopy);
const content = (b) => ({
  title: b.title,
  description: null,
  status: "TODO",
  priority: b.priority,
  start_date: null,
  due_date: b.due_date,
  notes: null,
  story_points: b.story_points,
  recurrence: null,
  project_ids: [],
  assignee_ids: [],
  label_ids: b.label_ids ?? [],
  custom_fields: b.custom_fields ?? {},
  parent_number: null,
});
// As the service stamps a create (its user, the version's actor and request), so the statement writes the same row.
const newTask = (body, fieldsSeen = []) => ({
  owner: user,
  actor: user,
  by: { actor: { type: "api_key", id: "cred_matched", user_id: user }, requestId: `req_${randomUUID().replaceAll("-", "")}`, batchKey: null },
  content: content(body),
  versionId: `ver_${randomUUID()}`,
  eventId: `evt_${randomUUID()}`,
  credentialId: "cred_matched",
  key: randomUUID(),
  fieldsSeen,
});

const handlers = {
  // GET /v1/organizations: the credential's organization by id.
  orgs: async () => ({ data: [await keys.organization(org)], has_more: false, next_cursor: null }),
  // GET /v1/tasks/{id}: the task's row.
  task: () => tasks.get(org, taskNumber),
  // GET /v1/tasks?limit=25: the list's statement (current tasks, newest change first).
  page: () => search.page(org, { filter: { and: [{ field: "archived", op: "eq", value: false }] }, sort: "-updated_at", limit: 25 }),
  // GET /v1/daily-plan: the day's sections and entries, then their tasks' summaries.
  board: async () => {
    const day = await boards.day(org, user, boardDay);
    return {
      ...day,
      tasks: await tasks.summaries(
        org,
        day.entries.map((e) => Number(e.task_number)),
      ),
    };
  },
  // POST /v1/tasks + Idempotency-Key: the create's statement (counter, task, version, outbox and
  // its events trigger, the key's record), on the copy.
  create: async (body) => (await create.create(org, [newTask(body)]))[0],
  // The same create with labels and custom field values: the labels' lock, the definitions of the
  // keys written (with their row versions), the members of the user values (the keys service's
  // statement, on its own tables), then the create's statement with the bigger row, on the copy.
  create_custom: async (body) => {
    const labels = await labelLocks.lockLabels(org, body.label_ids);
    if (labels.size !== body.label_ids.length) throw new Error("a label of the create is not in the copy");
    const defs = await definitions.definitions(org, Object.keys(body.custom_fields), false);
    const users = defs.filter((d) => d.type === "user").map((d) => body.custom_fields[d.key]);
    if (users.length > 0) await keys.currentMembers(org, users);
    return (
      await create.create(org, [
        newTask(
          body,
          defs.map((d) => ({ id: d.id, stamp: d.stamp })),
        ),
      ])
    )[0];
  },
  // POST /v1/api-keys + Idempotency-Key: the mint's transaction as the service sends it in one round
  // trip (BEGIN, the organization's lock, the mint statement with its replay check, role, record,
  // key and audit row, COMMIT), on the copy.
  apikey: async (body) => {
    const id = `key_${randomUUID()}`;
    const k = {
      id,
      organizationId: org,
      userId: user,
      name: body.name,
      keyHash: randomUUID(),
      keyPrefix: "svc_live_",
      scopes: [],
      legacy: false,
      testMode: false,
      expiresAt: null,
      createdAt: new Date(),
    };
    const created = {
      organizationId: org,
      action: "api_key.created",
      actor: { type: "api_key", id: "cred_matched", user_id: user },
      ctx: { request_id: `req_${randomUUID().replaceAll("-", "")}`, ip: "127.0.0.1", user_agent: "wrk" },
      target: { type: "api_key", id },
      changes: { name: { from: null, to: body.name }, scopes: { from: null, to: [] }, test_mode: { from: null, to: false }, legacy: { from: null, to: false } },
    };
    const once = { credentialId: "cred_matched", key: randomUUID(), result: { id } };
    const minted = await keysCopyDb.tx(
      async (t) => {
        const r = keysRepo(t);
        const [, out] = await Promise.all([r.lockOrganizationKeys(org), r.mintApiKey(k, once, MAX_LIVE_API_KEYS, created)]);
        return out;
      },
      { commitAhead: true },
    );
    if (minted.kind !== "minted") throw new Error(`the matched mint was ${minted.kind}`);
    return { ...minted, id };
  },
};

const nc = await connect({ servers: NATS_URL, noAsyncTraces: true, name: "matched-responder" });
const encoder = new TextEncoder();
for (const [name, handle] of Object.entries(handlers)) {
  nc.subscribe(`${NATS_NAMESPACE}.matched.${name}`, {
    queue: "matched",
    callback: (_err, msg) => {
      handle(msg.data.length ? msg.json() : undefined).then(
        (out) => msg.respond(out?.bytes instanceof Uint8Array ? out.bytes : encoder.encode(JSON.stringify(out))),
        (err) => msg.respond(encoder.encode(JSON.stringify({ error: String(err?.message ?? err) }))),
      );
    },
  });
}
await nc.flush();
console.log("ready");
// Exits on SIGTERM like the services, so a --cpu-prof profile is written.
process.on("SIGTERM", () => process.exit(0));
