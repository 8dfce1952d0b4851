import postgres from "postgres";
import { exportReads } from "/work/wtb/services/tasks/dist/repo/export-reads.js";
const sql = postgres("postgres://127.0.0.1:5432/postgres", { max: 1, onnotice: () => {} });
await sql`create temp table tasks (organization_id text, number bigint, owner_user_id text)`;
await sql`create temp table task_versions (id text, organization_id text, task_number bigint, seq int, version int default 1, title text, description text, status text, priority text, start_date timestamptz, due_date timestamptz, notes text, story_points numeric, recurrence jsonb, project_ids text[] default '{}', assignee_ids text[] default '{}', label_ids text[] default '{}', custom_fields jsonb default '{}', created_at timestamptz default now())`;
await sql`insert into tasks select 'o', g, 'u' from generate_series(1, 3000) g`;
await sql`insert into task_versions (id, organization_id, task_number, seq, title, status, notes) select 'v' || g, 'o', g, 1, 't', 'TODO', repeat('notes ', 40) from generate_series(1, 3000) g`;
const r = exportReads(sql);
let after = [0, 0]; let n = 0; const seen = new Set();
for (;;) {
  const { items } = await r.versions("o", after, 500);
  const last = items.at(-1);
  if (!last) break;
  for (const i of items) { if (seen.has(i.id)) console.log("dup", i.id, after); seen.add(i.id); n++; }
  console.log("chunk", items.length, items[0].task_number, last.task_number, last.seq);
  after = [last.task_number, last.seq];
}
console.log(n);
await sql.end();
