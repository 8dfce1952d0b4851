import { CommentEvent, CommentEventType, Task, TASK_ID_PATTERN, TaskEventType, taskNumber, webhookBody } from "@tasksvc/contracts";
import { newSigningSecret } from "@tasksvc/outbound";
import { DEV_SECRET_KEY, secretBox } from "@tasksvc/secrets";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { sampleComment, sampleTask } from "../src/domain/endpoints-service.js";
import { signer } from "../src/domain/signer.js";

// Pure logic of the probes (test event, verify) and of signing across a rotation: no database,
// no NATS. The HTTP side is covered by test/e2e/webhook-operations.test.ts.
const box = secretBox(DEV_SECRET_KEY, "WEBHOOK_SECRET_KEY");

describe("test event sample", () => {
  for (const type of TaskEventType.options) {
    it(`when the sample for ${type} is built, then it parses as a Task`, () => {
      const sample = sampleTask(type, new Date("2026-11-23T10:00:00.123Z"));
      const parsed = Task.safeParse(sample);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
      expect(sample.archived).toBe(type === "task.archived");
    });
  }

  for (const type of CommentEventType.options) {
    it(`when the sample for ${type} is built, then it is what a real ${type} event carries, on the sample task`, () => {
      const at = new Date("2026-11-23T10:00:00.123Z");
      const sample = sampleComment(type, at);
      const event = { id: "evt_1", type, organization_id: "org_1", created_at: at.toISOString(), data: sample };
      const parsed = CommentEvent.safeParse(event);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
      expect(sample.task_id).toBe("T-0");
      expect(Object.keys(sample)).toEqual(type === "comment.deleted" ? ["id", "task_id"] : expect.arrayContaining(["body", "mention_ids"]));
    });
  }

  it("when the sample is built, then its id is a well-formed task id that no task can have (T-0: numbers start at 1)", () => {
    const { id } = sampleTask("task.created", new Date());
    expect(id).toMatch(TASK_ID_PATTERN);
    expect(taskNumber(id)).toBeNull();
  });
});

describe("signing across a rotation", () => {
  const oldSecret = newSigningSecret();
  const newSecret = newSigningSecret();
  const s = signer(box);
  const body = webhookBody({ id: "evt_1", type: "task.created", created_at: new Date().toISOString(), data: { id: "T-1" } });

  it("when the previous secret is still in its window, then two v1 signatures, each verifiable with its own secret", () => {
    const rotated = { secretSealed: box.seal(newSecret), previousSecretSealed: box.seal(oldSecret), previousSecretExpiresAt: new Date(Date.now() + 3600_000) };
    const request = s.sign("https://hooks.example.com/", rotated, "evt_1", body);
    expect(request.body).toBe(body);
    const signatures = (request.headers["webhook-signature"] ?? "").split(" ");
    expect(signatures, JSON.stringify(request.headers)).toHaveLength(2);
    for (const s of signatures) expect(s.startsWith("v1,")).toBe(true);
    for (const secret of [oldSecret, newSecret]) {
      expect(new Webhook(secret).verify(request.body, request.headers)).toEqual(JSON.parse(request.body));
    }
    expect(() => new Webhook(newSigningSecret()).verify(request.body, request.headers)).toThrow();
  });

  it("when the previous secret's window has passed, then only the new secret signs", () => {
    const expired = { secretSealed: box.seal(newSecret), previousSecretSealed: box.seal(oldSecret), previousSecretExpiresAt: new Date(Date.now() - 1000) };
    const request = s.sign("https://hooks.example.com/", expired, "evt_2", body);
    expect((request.headers["webhook-signature"] ?? "").split(" ")).toHaveLength(1);
    expect(new Webhook(newSecret).verify(request.body, request.headers)).toEqual(JSON.parse(request.body));
    expect(() => new Webhook(oldSecret).verify(request.body, request.headers)).toThrow();
  });
});
