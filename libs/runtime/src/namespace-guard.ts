import { StartupError } from "@tasksvc/config";
import { databaseIdentity, type Sql } from "@tasksvc/db";
import { markNamespace, namespaceMarkSubject, namespaceMarksStream, type NamespaceMark, type NatsConnection } from "@tasksvc/nats";

/**
 * Two stacks sharing NATS_NAMESPACE but not a database would answer each other's requests
 * unnoticed, so the first start of a service marks the namespace with its database and every
 * later start compares (decision 0033). A promoted standby is the same database (a physical copy).
 */
export async function guardNamespace(nc: NatsConnection, sql: Sql, o: { namespace: string; service: string; replicas?: number }): Promise<NamespaceMark> {
  const me = await databaseIdentity(sql);
  const mark = { service: o.service, database: me.database, system_identifier: me.systemIdentifier };
  const held = await markNamespace(nc, o.namespace, mark, o.replicas === undefined ? {} : { replicas: o.replicas });
  if (held.database === mark.database && held.system_identifier === mark.system_identifier) return held;
  const named = (m: Pick<NamespaceMark, "database" | "system_identifier">) => `database "${m.database}" (system identifier ${m.system_identifier})`;
  throw new StartupError(
    `NATS_NAMESPACE=${o.namespace} belongs to another database: the ${o.service} service there uses ${named(held)} since ${held.marked_at}, ` +
      `this one ${named(mark)}; two stacks in one namespace would answer each other's requests. Give this stack a NATS_NAMESPACE of its own, ` +
      `or, if that database is gone for good or the ${o.service} schema has moved here, release the mark and start again: ` +
      `nats stream purge ${namespaceMarksStream(o.namespace)} --subject ${namespaceMarkSubject(o.namespace, o.service)} --force`,
  );
}
