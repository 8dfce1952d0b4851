import { randomBytes, randomUUID } from "node:crypto";
import { keysRpc, systemContext, type OpInput, type OpName, type OpOutput, type Plan, type Role, type Scope } from "@tasksvc/contracts";
import { client, connectNats, type NatsConnection } from "@tasksvc/nats";
import type { StackInfo } from "./stack.js";

export interface Tenant {
  organizationId: string;
  userId: string;
  apiKey: string;
  email: string;
}

/** Every test makes its own tenants, so tests never see each other's data. */
export function factories(stack: StackInfo) {
  let nc: Promise<NatsConnection> | undefined;
  const conn = () => (nc ??= connectNats({ url: stack.natsUrl, name: "test-factories" }));
  async function admin<K extends OpName<typeof keysRpc>>(op: K, input: OpInput<typeof keysRpc, K>): Promise<OpOutput<typeof keysRpc, K>> {
    const keys = client(await conn(), keysRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
    return keys.call(op, input, systemContext(`test_${randomUUID()}`));
  }
  const email = () => `user-${randomBytes(6).toString("hex")}@example.test`;

  return {
    admin,
    email,
    async tenant(plan: Plan = "pro"): Promise<Tenant> {
      const e = email();
      const r = await admin("bootstrap", { org: `Org ${randomBytes(3).toString("hex")}`, plan, email: e });
      return { organizationId: r.organization_id, userId: r.user_id, apiKey: r.api_key, email: e };
    },
    async user(orgId: string, role: Role = "member") {
      const e = email();
      const r = await admin("addUser", { org: orgId, email: e, role });
      return { userId: r.user_id, apiKey: r.api_key, email: e };
    },
    async token(orgId: string, userId: string, scopes: Scope[], ttl = 3600): Promise<string> {
      return (await admin("issueToken", { org: orgId, user: userId, scopes, ttl })).access_token;
    },
    async close() {
      if (nc) await (await nc).close();
    },
  };
}
