// The metric names PromQL expressions select, for the tests that hold the dashboards and alerting
// rules to what the processes export. Parsed with Prometheus' own grammar
// (@prometheus-io/lezer-promql: what Prometheus' UI and Grafana's query builder parse with), not
// with patterns: a metric name is exactly the identifier of a vector selector, so function names,
// aggregation and matching keywords, grouping labels, label matchers, strings, durations and
// numbers never count, and an expression that does not parse fails instead of passing unread.
import { parser } from "@prometheus-io/lezer-promql";

/**
 * The metric names an expression selects, each once, in order of first use. Throws when the
 * expression does not parse, or picks metrics by a pattern on `__name__` (nothing to check).
 */
export function metricNames(expr: string): string[] {
  const names = new Set<string>();
  parser.parse(expr).iterate({
    enter(ref) {
      if (ref.type.isError)
        throw new Error(`not PromQL at offset ${ref.from}: ${expr.slice(Math.max(0, ref.from - 30), ref.from)}⚠${expr.slice(ref.from, ref.from + 30)}`);
      if (ref.name !== "VectorSelector") return;
      const node = ref.node;
      const id = node.getChild("Identifier");
      if (id) names.add(text(expr, id));
      const matchers = node.getChild("LabelMatchers");
      // {"a.b", job="x"}: a quoted metric name among the matchers.
      for (const quoted of matchers?.getChildren("QuotedLabelName") ?? []) names.add(unquote(text(expr, quoted)));
      for (const m of [...(matchers?.getChildren("UnquotedLabelMatcher") ?? []), ...(matchers?.getChildren("QuotedLabelMatcher") ?? [])]) {
        const label = m.getChild("LabelName") ?? m.getChild("QuotedLabelName");
        const labelName = label?.name === "QuotedLabelName" ? unquote(text(expr, label)) : label && text(expr, label);
        if (labelName !== "__name__") continue;
        const op = m.getChild("MatchOp");
        const value = m.getChild("StringLiteral");
        if (!op || !value || text(expr, op) !== "=") throw new Error(`selects metrics by a pattern on __name__, which cannot be checked: ${expr}`);
        names.add(unquote(text(expr, value)));
      }
    },
  });
  return [...names];
}

const text = (expr: string, node: { from: number; to: number }) => expr.slice(node.from, node.to);

/** A PromQL string literal's value ("…" and '…' with backslash escapes, `…` raw). */
function unquote(literal: string): string {
  const body = literal.slice(1, -1);
  return literal.startsWith("`") ? body : body.replace(/\\(.)/g, "$1");
}

/**
 * A Grafana query as Prometheus receives it: each template variable ($x, ${x}, ${x:format},
 * [[x]]) outside a string replaced by a value of its place, a duration inside [ ] ($__rate_interval)
 * and a number elsewhere. Inside strings (label matchers) variables are left alone: any text is
 * valid there, and a label value is never a metric name.
 */
export function withoutGrafanaVariables(expr: string): string {
  const variable = /\$\{\w+(?::[^}]*)?\}|\$\w+|\[\[\w+(?::\w+)?\]\]/y;
  let out = "";
  let quote: string | undefined;
  let brackets = 0;
  for (let i = 0; i < expr.length; ) {
    const c = expr.charAt(i);
    if (quote) {
      const escaped = c === "\\" && quote !== "`";
      out += escaped ? expr.slice(i, i + 2) : c;
      i += escaped ? 2 : 1;
      if (!escaped && c === quote) quote = undefined;
      continue;
    }
    variable.lastIndex = i;
    const v = variable.exec(expr);
    if (v) {
      out += brackets > 0 ? "5m" : "1";
      i += v[0].length;
      continue;
    }
    if (c === "#") {
      // A comment runs to the end of the line; a quote in it opens no string.
      const end = expr.indexOf("\n", i);
      out += expr.slice(i, end < 0 ? expr.length : end);
      i = end < 0 ? expr.length : end;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") quote = c;
    else if (c === "[") brackets++;
    else if (c === "]") brackets--;
    out += c;
    i++;
  }
  return out;
}

/** One PromQL expression and where it was found, for messages. */
export interface Query {
  where: string;
  expr: string;
}

// Parsed JSON, read loosely: a dashboard from any Grafana version, checked field by field.
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Every PromQL expression of a Grafana dashboard, Grafana's variables replaced: each `expr` at any
 * depth (panels' targets, the panels of collapsed rows), and each query variable's query.
 */
export function dashboardQueries(dashboard: unknown): Query[] {
  const found: Query[] = [];
  const walk = (v: unknown, where: string): void => {
    if (Array.isArray(v)) for (const x of v) walk(x, where);
    else if (isObject(v)) {
      const here = typeof v["title"] === "string" && typeof v["id"] === "number" ? `panel ${v["id"]} "${v["title"]}"` : where;
      for (const [k, x] of Object.entries(v)) {
        if (k === "templating") continue;
        if (k === "expr" && typeof x === "string")
          found.push({ where: typeof v["refId"] === "string" ? `${here} ${v["refId"]}` : here, expr: withoutGrafanaVariables(x) });
        else walk(x, here);
      }
    }
  };
  walk(dashboard, "dashboard");
  const templating = isObject(dashboard) && isObject(dashboard["templating"]) ? dashboard["templating"]["list"] : undefined;
  for (const variable of Array.isArray(templating) ? templating : []) {
    if (!isObject(variable) || variable["type"] !== "query") continue;
    const q = variable["query"];
    const text = isObject(q) ? q["query"] : q;
    if (typeof text !== "string") continue;
    for (const expr of variableQueryExprs(text)) found.push({ where: `variable ${String(variable["name"])}`, expr: withoutGrafanaVariables(expr) });
  }
  return found;
}

/**
 * The PromQL inside a Grafana query variable of a Prometheus data source: the series selector of
 * label_values(selector, label), the query of query_result(query); none for label_values(label),
 * label_names() and metrics(regex). Anything else is taken as PromQL, so it is parsed, not skipped.
 */
export function variableQueryExprs(query: string): string[] {
  const q = query.trim();
  const call = /^(label_values|query_result|label_names|metrics)\s*\(([\s\S]*)\)$/.exec(q);
  if (!call) return [q];
  const [, fn, args = ""] = call;
  if (fn === "query_result") return [args];
  if (fn !== "label_values") return [];
  // The label is the last argument, an identifier: whatever comes before its comma is the selector.
  const split = /,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*$/.exec(args);
  return split ? [args.slice(0, split.index)] : [];
}
