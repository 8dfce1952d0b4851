import { CreateCommentBody, MENTION_PATTERN, mentionsIn, TaskRef } from "@tasksvc/contracts";
import { z } from "zod";
import { toTask } from "../../repo/task-json.js";
import { type JsonlDeps, type LineHandler, problem, type Problem, zodProblems } from "./tally.js";

/** The dependencies API names the blocker `blocker_task_id`; `depends_on_id` is taken as the same. */
const DependencyLine = z
  .looseObject({ task_id: TaskRef, blocker_task_id: TaskRef.optional(), depends_on_id: TaskRef.optional() })
  .refine((d) => d.blocker_task_id !== undefined || d.depends_on_id !== undefined, { message: "is required", path: ["blocker_task_id"] });
const CommentLine = z.looseObject({ task_id: TaskRef, author_id: z.string().optional(), body: z.string() });

type Outcome<T> = { line: number; problems: Problem[] } | ({ line: number } & T);
const unknownTask = (at: string, id: string) => problem(at, "unknown_reference", `no task line of the file is ${id} (or its line failed)`);

export function linkHandlers(deps: JsonlDeps): Record<"dependency" | "comment", LineHandler> {
  const { run, repos } = deps;
  const maps = repos.importMaps;

  const dependency: LineHandler = {
    async prepare(lines) {
      const parsed = lines.map((l) => ({ line: l.line, d: DependencyLine.safeParse(l.obj) }));
      const ids = parsed.flatMap((p) => (p.d.success ? [p.d.data.task_id, p.d.data.blocker_task_id ?? p.d.data.depends_on_id ?? ""] : []));
      const tasks = await maps.tasks(run.id, ids);
      const outcomes: Array<Outcome<{ blocked: number | null; blocker: number | null }>> = parsed.map((p) => {
        if (!p.d.success) return { line: p.line, problems: zodProblems(p.d.error) };
        const blockerAt = p.d.data.blocker_task_id === undefined ? "/depends_on_id" : "/blocker_task_id";
        const blockerId = p.d.data.blocker_task_id ?? p.d.data.depends_on_id ?? "";
        const out: Problem[] = [];
        if (!tasks.has(p.d.data.task_id)) out.push(unknownTask("/task_id", p.d.data.task_id));
        if (!tasks.has(blockerId)) out.push(unknownTask(blockerAt, blockerId));
        if (blockerId === p.d.data.task_id) out.push(problem(blockerAt, "validation_failed", "a task cannot block itself"));
        return out.length > 0
          ? { line: p.line, problems: out }
          : { line: p.line, blocked: tasks.get(p.d.data.task_id) ?? null, blocker: tasks.get(blockerId) ?? null };
      });
      return {
        async write(r, tally) {
          // One writer of the organization's graph at a time, as the route: a loop is checked against every link.
          if (!run.dryRun) await r.dependencies.lock(run.org);
          for (const o of outcomes) {
            if ("problems" in o) tally.fail(o.line, o.problems);
            else if (o.blocked !== null && o.blocker !== null) {
              if (await r.dependencies.isBlockedBy(run.org, o.blocker, o.blocked)) {
                tally.fail(o.line, [problem("", "dependency_cycle", `T-${o.blocked} already blocks T-${o.blocker} here; this link would close a loop`)]);
                continue;
              }
              if (await r.dependencies.insert(run.org, o.blocked, o.blocker)) {
                const row = await r.tasks.get(run.org, o.blocked);
                // As the route: nothing the task shows changed, its dependency view did.
                if (row) await r.events.emit(run.org, run.userId, "task.updated", toTask(row), {});
                tally.touched.push(o.blocked);
              }
            }
          }
        },
      };
    },
  };

  const comment: LineHandler = {
    async prepare(lines) {
      const parsed = lines.map((l) => ({ line: l.line, c: CommentLine.safeParse(l.obj) }));
      const good = parsed.flatMap((p) => (p.c.success ? [p.c.data] : []));
      const [tasks, users] = await Promise.all([
        maps.tasks(
          run.id,
          good.map((c) => c.task_id),
        ),
        maps.refs(
          run.id,
          "user",
          good.flatMap((c) => [...(c.author_id === undefined ? [] : [c.author_id]), ...mentionsIn(c.body)]),
        ),
      ]);
      const outcomes: Array<Outcome<{ number: number | null; author: string; body: string }>> = parsed.map((p) => {
        if (!p.c.success) return { line: p.line, problems: zodProblems(p.c.error) };
        const c = p.c.data;
        if (!tasks.has(c.task_id)) return { line: p.line, problems: [unknownTask("/task_id", c.task_id)] };
        // A mention of a member here names them; anyone else is left as text (their email when the file gives it).
        const rewritten = c.body.replace(MENTION_PATTERN, (_whole, id: string) => {
          const u = users.get(id);
          return u?.target_id ? `<@${u.target_id}>` : `@${u?.name ?? id}`;
        });
        const body = CreateCommentBody.safeParse({ body: rewritten });
        if (!body.success) return { line: p.line, problems: zodProblems(body.error) };
        const author = (c.author_id === undefined ? undefined : users.get(c.author_id)?.target_id) ?? run.userId;
        return { line: p.line, number: tasks.get(c.task_id) ?? null, author, body: body.data.body };
      });
      return {
        async write(r, tally) {
          for (const o of outcomes) {
            if ("problems" in o) tally.fail(o.line, o.problems);
            else if (o.number !== null) {
              const made = await r.comments.create(run.org, o.number, {
                author: o.author,
                body: o.body,
                mentions: mentionsIn(o.body),
                credentialId: run.userId,
                key: undefined,
              });
              if (made.outcome !== "created") tally.fail(o.line, [unknownTask("/task_id", `T-${o.number}`)]);
            }
          }
        },
      };
    },
  };

  return { dependency, comment };
}
