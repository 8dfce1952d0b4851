import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { TracerProvider } from "@opentelemetry/sdk-trace";

export { SpanKind, SpanStatusCode, context, trace, ROOT_CONTEXT };
export type { Context, Span, Attributes, Link };

/**
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then no span is made and no context manager is
 * installed (no AsyncLocalStorage on the hot path), so the cost is one branch per hop (decision 0018).
 */
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

let provider: TracerProvider | undefined;

export interface TracingOptions {
  serviceName: string;
  /** Spans go to `<endpoint>/v1/traces`. */
  endpoint: string | undefined;
  version?: string;
}

/**
 * Once per process, from its main. The SDK and its exporter are loaded only here, when tracing is
 * on: a process that does not trace keeps their modules out of the heap its collections mark.
 */
export async function initTracing(opts: TracingOptions): Promise<{ shutdown(): Promise<void> }> {
  if (!opts.endpoint || provider) return { shutdown: async () => {} };
  const url = `${opts.endpoint.replace(/\/+$/, "")}/v1/traces`;
  const [{ AsyncLocalStorageContextManager }, { OTLPTraceExporter }, { resourceFromAttributes }, sdk] = await Promise.all([
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace"),
  ]);
  // Two mains starting at once would otherwise both pass the check above.
  if (provider) return { shutdown: async () => {} };
  provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ "service.name": opts.serviceName, "service.namespace": "tasksvc", "service.version": opts.version ?? "0.1.0" }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: 1000 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  const p = provider;
  return {
    async shutdown() {
      await p.shutdown().catch(() => undefined);
    },
  };
}

export const tracingEnabled = (): boolean => provider !== undefined;

export const tracer = () => trace.getTracer("tasksvc");

export interface HeaderCarrier {
  get(key: string): string | undefined | null;
  set(key: string, value: string): void;
}

const getter: TextMapGetter<HeaderCarrier> = {
  keys: () => ["traceparent", "tracestate"],
  get: (c, k) => c.get(k) || undefined,
};
const setter: TextMapSetter<HeaderCarrier> = { set: (c, k, v) => c.set(k, v) };

export function injectContext(carrier: HeaderCarrier, ctx: Context = context.active()): void {
  if (provider) propagation.inject(ctx, carrier, setter);
}

export function extractContext(carrier: HeaderCarrier | undefined): Context {
  return carrier ? propagation.extract(ROOT_CONTEXT, carrier, getter) : ROOT_CONTEXT;
}

/** Null when there is none. */
export function currentTraceparent(ctx: Context = context.active()): string | null {
  if (!provider) return null;
  const sc = trace.getSpanContext(ctx);
  if (!sc || !trace.isSpanContextValid(sc)) return null;
  const flags = (sc.traceFlags & 1).toString(16).padStart(2, "0");
  return `00-${sc.traceId}-${sc.spanId}-${flags}`;
}

/** The root when it is null or malformed. */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent }, { keys: () => ["traceparent"], get: (c, k) => (c as Record<string, string>)[k] });
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  parent?: Context;
}

const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Only inside a trace already going: background work would otherwise start a new trace every few milliseconds. */
export function inChildSpan<T>(name: string, opts: Omit<SpanOptions, "parent">, fn: (span: Span) => Promise<T>): Promise<T> {
  if (!provider || !trace.getSpanContext(context.active())) return fn(NO_SPAN);
  return inSpan(name, opts, fn);
}

/** With tracing off, `fn` runs as it is. */
export function inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = opts.parent ?? context.active();
  if (!provider) return fn(NO_SPAN);
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, links: opts.links }, parent);
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn(span);
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
      throw e;
    } finally {
      span.end();
    }
  });
}
