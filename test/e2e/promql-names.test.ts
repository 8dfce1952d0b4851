// Unit tests of the PromQL reading the dashboard and rule checks rely on (dashboard-metrics.test.ts):
// pure logic, no stack.
import { describe, expect, it } from "vitest";
import { dashboardQueries, metricNames, variableQueryExprs, withoutGrafanaVariables } from "./promql-names.js";

describe("metricNames", () => {
  it("when a quantile aggregates buckets by le and route, then only the bucket series is a name, not the function, the keyword or the grouping labels", () => {
    const expr = `histogram_quantile(0.99, sum by (le, route) (rate(tasksvc_http_request_duration_seconds_bucket{route!~"/healthz|/readyz"}[5m])))`;
    expect(metricNames(expr)).toEqual(["tasksvc_http_request_duration_seconds_bucket"]);
  });

  it("when label matchers hold metric-like text, then it is not read as a metric", () => {
    const expr = `sum(rate(http_count{status_code=~"5..", job="rate(fake_total[5m])", route!='sum(other)'}[5m])) / sum(rate(http_count[5m]))`;
    expect(metricNames(expr)).toEqual(["http_count"]);
  });

  it("when two rates are divided ignoring a label with group_left, then both metrics and neither label list are names", () => {
    expect(metricNames("rate(x_total[5m]) / ignoring(code) group_left(extra) rate(y_total[5m])")).toEqual(["x_total", "y_total"]);
  });

  it("when keywords, modifiers and literals surround the selectors, then only the selectors are names", () => {
    const expr = "sum without (instance) (a) > bool on (job) b offset 5m and c unless d or vector(0) + 0x1F * Inf - NaN";
    expect(metricNames(expr)).toEqual(["a", "b", "c", "d"]);
  });

  it("when a subquery, an @ modifier, label_replace's strings and a comment appear, then only the selectors are names", () => {
    expect(metricNames("max_over_time(deriv(pending[5m])[1h:5m]) @ end()")).toEqual(["pending"]);
    expect(metricNames('label_replace(up, "dst", "$1", "src", "(.*)")')).toEqual(["up"]);
    expect(metricNames("a_total # rate(b_total[5m]) is a comment")).toEqual(["a_total"]);
    expect(metricNames('count_values("le", build_info) + on() group_left count(by)')).toEqual(["build_info", "by"]);
  });

  it("when the name is given as a __name__ matcher or a quoted name, then that is the name; a pattern on __name__ cannot be checked and throws", () => {
    expect(metricNames('{__name__="a_total", job="x"}')).toEqual(["a_total"]);
    expect(metricNames('{"b.seconds", job="x"}')).toEqual(["b.seconds"]);
    expect(() => metricNames('{__name__=~"tasksvc_.*"}')).toThrow(/pattern on __name__/);
  });

  it("when an expression does not parse, then it throws, naming where, instead of yielding what it could read", () => {
    expect(() => metricNames("sum(rate(x[5m])")).toThrow(/not PromQL/);
    expect(() => metricNames("foo bar")).toThrow(/not PromQL at offset 4/);
    expect(() => metricNames("rate(x[$__rate_interval])")).toThrow(/not PromQL/);
  });
});

describe("withoutGrafanaVariables", () => {
  it("when Grafana variables stand for durations, numbers or label values, then they become a duration, a number, and stay as they are in strings", () => {
    expect(withoutGrafanaVariables(`rate(x{ns=~"$namespace", a="\${b:regex}"}[$__rate_interval])`)).toBe(`rate(x{ns=~"$namespace", a="\${b:regex}"}[5m])`);
    expect(withoutGrafanaVariables("topk($limit, y) offset [[shift]]")).toBe("topk(1, y) offset 1");
    expect(withoutGrafanaVariables(`max_over_time(z[\${__range}:$__interval]) # $x [`)).toBe("max_over_time(z[5m:5m]) # $x [");
    expect(metricNames(withoutGrafanaVariables('sum by (le) (rate(h_bucket{job=~"$job"}[$__rate_interval]))'))).toEqual(["h_bucket"]);
  });
});

describe("variableQueryExprs", () => {
  it("when a query variable uses Grafana's functions, then the PromQL inside them is returned, and none where there is none", () => {
    expect(variableQueryExprs('label_values(tasksvc_nats_connected{namespace=~"$namespace"}, job)')).toEqual([
      'tasksvc_nats_connected{namespace=~"$namespace"}',
    ]);
    expect(variableQueryExprs("label_values(namespace)")).toEqual([]);
    expect(variableQueryExprs("query_result(count by (job) (up))")).toEqual(["count by (job) (up)"]);
    expect(variableQueryExprs("metrics(tasksvc_.*)")).toEqual([]);
    expect(variableQueryExprs("sum(x)")).toEqual(["sum(x)"]);
  });
});

describe("dashboardQueries", () => {
  it("when a dashboard has targets in a collapsed row and query variables, then every expression is found, with the panel it belongs to", () => {
    const dashboard = {
      panels: [
        { id: 1, title: "open", type: "timeseries", targets: [{ refId: "A", expr: "rate(a_total[$__rate_interval])" }] },
        { id: 2, title: "folded", type: "row", collapsed: true, panels: [{ id: 3, title: "inner", targets: [{ expr: "b" }] }] },
      ],
      templating: {
        list: [
          { name: "datasource", type: "datasource", query: "prometheus" },
          { name: "ns", type: "query", query: { query: "label_values(c_info, namespace)", refId: "V" } },
          { name: "old", type: "query", query: "query_result(d)" },
        ],
      },
    };
    expect(dashboardQueries(dashboard)).toEqual([
      { where: 'panel 1 "open" A', expr: "rate(a_total[5m])" },
      { where: 'panel 3 "inner"', expr: "b" },
      { where: "variable ns", expr: "c_info" },
      { where: "variable old", expr: "d" },
    ]);
  });
});
