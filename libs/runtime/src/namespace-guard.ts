import { StartupError } from "@tasksvc/config";
import { databaseIdentity, type Sql } from "@tasksvc/db";
import { markNamespace, namespaceMarkSubject, namespaceMarksStream, type NamespaceMark, type NatsConnection } from "@tasksvc/nats";

/**
 * One namespace, one database. Two stacks that share NATS_NAMESPACE but not a database would
 * answer each other's requests, and neither would notice: each service's replicas would be two
 * queue groups' worth of one service, half of them on data the other half never saw. So the
 * first start of a service in a namespace marks the namespace with its database (the cluster's
 * system identifier and the database's name), and every later start compares: a start on
 * another database stops with the fix. Per service, not per namespace, because each service may
 * have a database of its own (<SERVICE>_DATABASE_URL).
 *
 * A standby promoted by failover has the primary's system identifier (it is a physical copy),
 * and a database dropped and made again under its name counts as the same one: both start as
 * before. A database restored into another cluster, renamed, or a schema moved to another
 * database is another database: the mark must be released (the message says how).
 *
 * The delivery worker has no database, so it cannot tell: it works for whichever stack's
 * webhooks service serves the namespace, whose start this guard has checked.
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
