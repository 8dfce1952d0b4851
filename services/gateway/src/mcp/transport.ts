import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  type JSONRPCMessage,
  McpError,
  type MessageExtraInfo,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import { AppError } from "@tasksvc/errors";
import { MCP_MAX_MESSAGES } from "./paths.js";

/** What a POST is answered with: the JSON text of the JSON-RPC responses (one, or an array for a batch), or 202 with nothing. */
export type Answer = { status: 200; body: string } | { status: 202 };

/** A tool call answered without the protocol object: the JSON text of its result. */
export type FastCall = (name: string, args: Record<string, unknown>, context: unknown) => Promise<string>;

interface Waiting {
  /** The id the client gave each request, by the id the protocol object saw. */
  clientIds: Map<number, RequestId>;
  responses: Map<number, string>;
  order: number[];
  done(answer: Answer): void;
}

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A tools/call whose params are a name and plain arguments only, as the SDK's schema accepts them,
 * is answered by the tool directly; anything else (a task, a progress token, a malformed call) goes
 * to the protocol object, which parses and answers it as the SDK does.
 */
function fastParams(m: JSONRPCMessage): { name: string; args: Record<string, unknown> } | undefined {
  if (!("method" in m) || m.method !== "tools/call" || !("id" in m) || !isPlain(m.params)) return undefined;
  const { name, arguments: args, ...rest } = m.params as Record<string, unknown>;
  if (typeof name !== "string" || Object.keys(rest).length > 0 || (args !== undefined && !isPlain(args))) return undefined;
  return { name, args: args ?? {} };
}

/** A JSON-RPC error response, as the SDK's protocol object shapes one from what a handler threw. */
function errorText(id: RequestId, e: unknown): string {
  const code = e instanceof McpError ? e.code : ErrorCode.InternalError;
  const message = e instanceof Error ? e.message : "Internal error";
  return JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } });
}

/**
 * The server side of MCP's Streamable HTTP transport, stateless and answering JSON only, as one
 * transport for the whole process: one SDK protocol object serves every POST. Each request's id
 * is swapped for one unique in this process on the way in and back on the way out, so requests
 * of different clients that share an id never meet in the protocol object's tables. The SDK's
 * own transport needs a protocol object and a transport per POST, and converts each request to a
 * web Request and back; decision 0046 has what that cost and what an MCP call costs beyond its
 * REST request. Tool calls, the one hot path, skip the protocol object (see `fastParams`).
 */
export class StatelessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  private next = 1;
  private readonly waiting = new Map<number, Waiting>();
  private readonly contexts = new Map<number, unknown>();

  constructor(private readonly fastCall?: FastCall) {}

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  /** The context the POST that carried a request was handled with (for the tool handlers). */
  contextOf(requestId: RequestId): unknown {
    return typeof requestId === "number" ? this.contexts.get(requestId) : undefined;
  }

  async send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    // A stateless server has no stream to speak first on: notifications and requests of its own
    // (progress, logging) have nowhere to go and are dropped.
    if (!("id" in message) || "method" in message) return;
    const id = message.id;
    if (typeof id !== "number") return;
    const w = this.waiting.get(id);
    if (w) this.answer(id, w, JSON.stringify({ ...message, id: w.clientIds.get(id) ?? id }));
  }

  private answer(id: number, w: Waiting, text: string): void {
    this.waiting.delete(id);
    this.contexts.delete(id);
    w.responses.set(id, text);
    if (w.responses.size < w.order.length) return;
    const all = w.order.map((i) => w.responses.get(i) as string);
    w.done({ status: 200, body: all.length === 1 ? (all[0] as string) : `[${all.join(",")}]` });
  }

  /** One POST's body: checked as the MCP spec says, handed to the protocol object, answered once every request in it is. */
  handle(body: unknown, headers: { accept?: string | undefined; protocolVersion?: string | undefined }, context: unknown): Promise<Answer> {
    const accept = headers.accept ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream"))
      throw refused("the Accept header must list both application/json and text/event-stream.");
    const raw = Array.isArray(body) ? body : [body];
    if (raw.length === 0) throw refused("the body holds no JSON-RPC message.");
    if (raw.length > MCP_MAX_MESSAGES)
      throw new AppError("validation_failed", `A POST carries at most ${MCP_MAX_MESSAGES} JSON-RPC messages.`, {
        errors: [{ pointer: "/", message: `holds ${raw.length} messages; at most ${MCP_MAX_MESSAGES}` }],
      });
    const messages: JSONRPCMessage[] = [];
    for (const m of raw) {
      const message = jsonRpcMessage(m);
      if (!message) throw refused("the body is not a JSON-RPC 2.0 message or an array of them.");
      messages.push(message);
    }
    const initializing = messages.filter((m) => "method" in m && m.method === "initialize").length;
    if (initializing > 1 || (initializing === 1 && messages.length > 1)) throw refused("an initialize request must be sent alone.");
    if (initializing === 0 && headers.protocolVersion !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(headers.protocolVersion))
      throw refused(`unsupported protocol version ${headers.protocolVersion} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}).`);
    const requests = messages.filter((m) => "method" in m && "id" in m);
    // A cancellation names a request of another POST by the client's id, which this process never
    // saw (and which may equal another client's): nothing to cancel. Responses answer requests this
    // server never sends.
    const delivered = messages.filter((m) => "method" in m && m.method !== "notifications/cancelled");
    if (requests.length === 0) {
      for (const m of delivered) this.onmessage?.(m);
      return Promise.resolve({ status: 202 });
    }
    return new Promise<Answer>((resolve) => {
      const w: Waiting = { clientIds: new Map(), responses: new Map(), order: [], done: resolve };
      const toProtocol: JSONRPCMessage[] = [];
      const fast: { id: number; name: string; args: Record<string, unknown> }[] = [];
      for (const m of delivered) {
        if (!("id" in m)) {
          toProtocol.push(m);
          continue;
        }
        const id = this.next++;
        w.clientIds.set(id, m.id as RequestId);
        w.order.push(id);
        this.waiting.set(id, w);
        const call = this.fastCall ? fastParams(m) : undefined;
        if (call) fast.push({ id, ...call });
        else {
          this.contexts.set(id, context);
          toProtocol.push({ ...m, id } as JSONRPCMessage);
        }
      }
      for (const m of toProtocol) this.onmessage?.(m);
      for (const { id, name, args } of fast) {
        const clientId = w.clientIds.get(id) as RequestId;
        (this.fastCall as FastCall)(name, args, context).then(
          (result) => this.answer(id, w, `{"jsonrpc":"2.0","id":${JSON.stringify(clientId)},"result":${result}}`),
          (e: unknown) => this.answer(id, w, errorText(clientId, e)),
        );
      }
    });
  }
}

/**
 * The envelope only: each request's and notification's params are parsed by the protocol object
 * against the method's own schema (a bad one answers a JSON-RPC error), so the SDK's parse of
 * the whole message, a union of every message type, would be spent twice on every call.
 */
function jsonRpcMessage(m: unknown): JSONRPCMessage | undefined {
  if (typeof m !== "object" || m === null || Array.isArray(m)) return undefined;
  const { jsonrpc, id, method, params } = m as Record<string, unknown>;
  if (jsonrpc !== "2.0") return undefined;
  const idOk = id === undefined || typeof id === "string" || (typeof id === "number" && Number.isInteger(id));
  const paramsOk = params === undefined || (typeof params === "object" && params !== null && !Array.isArray(params));
  if (typeof method === "string") return idOk && paramsOk ? (m as JSONRPCMessage) : undefined;
  // A response: never used (this server sends no requests), but valid to send.
  return id !== undefined && idOk && ("result" in m || "error" in m) ? (m as JSONRPCMessage) : undefined;
}

function refused(why: string): AppError {
  return new AppError("malformed_request", `The MCP request was refused: ${why}`);
}
