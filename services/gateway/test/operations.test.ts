import { PageQuery } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { NoQuery, type ResourceBuilder } from "../src/pipeline/operation.js";
import { resource } from "../src/pipeline/resource.js";

const Item = z.object({ id: z.string() });
const ItemParams = z.object({ item_id: z.string() });
const shape = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, operationId: string) => ({
  method,
  url,
  operationId,
  summary: operationId,
  response: Item,
});
const noop = async () => ({ id: "x" });

describe("resource(): what a resource states once", () => {
  it("when a resource states a scope family, then its reads require <family>:read and its other methods <family>:write", () => {
    const items = resource({ name: "items", scopes: "projects" }, (r) => {
      r.op(shape("GET", "/v1/items", "listItems"), noop);
      r.op(shape("POST", "/v1/items", "createItem"), noop);
      r.op({ ...shape("PATCH", "/v1/items/:item_id", "updateItem"), params: ItemParams }, noop);
      r.op({ ...shape("DELETE", "/v1/items/:item_id", "deleteItem"), params: ItemParams }, noop);
    });
    expect(items.operations.map((o) => [o.operationId, o.scope])).toEqual([
      ["listItems", "projects:read"],
      ["createItem", "projects:write"],
      ["updateItem", "projects:write"],
      ["deleteItem", "projects:write"],
    ]);
  });

  it("when a resource states one scope and an entitlement, then every operation requires both unless it states its own", () => {
    const items = resource({ name: "items", scope: "api-keys:manage", entitlement: "outbound_webhooks" }, (r) => {
      r.op(shape("GET", "/v1/items", "listItems"), noop);
      r.op(shape("POST", "/v1/items", "createItem"), noop);
      r.op({ ...shape("POST", "/v1/items/search", "searchItems"), scope: "tasks:read", entitlement: "public_api" }, noop);
    });
    expect(items.operations.map((o) => [o.operationId, o.scope, o.entitlement])).toEqual([
      ["listItems", "api-keys:manage", "outbound_webhooks"],
      ["createItem", "api-keys:manage", "outbound_webhooks"],
      ["searchItems", "tasks:read", "public_api"],
    ]);
  });

  it("when an operation states only its shape, then it takes the house defaults: public_api, JSON, no query, 200, no policy", () => {
    const [op] = resource({ name: "items", scope: "tasks:read" }, (r) => r.op(shape("GET", "/v1/items", "listItems"), noop)).operations;
    expect(op).toMatchObject({
      resource: "items",
      entitlement: "public_api",
      kind: "json",
      contentTypes: ["application/json"],
      query: NoQuery,
      status: 200,
      idempotent: false,
      secretInResponse: false,
      paginated: false,
      exactCharge: false,
      errors: [],
      otherStatuses: {},
    });
    expect(op).not.toHaveProperty("params");
    expect(op).not.toHaveProperty("body");
  });

  it("when an operation states a field, then its value wins over the default", () => {
    const [op] = resource({ name: "items", scopes: "tasks" }, (r) =>
      r.op({ ...shape("POST", "/v1/items", "createItem"), query: PageQuery, body: Item, status: 201, idempotent: true, errors: ["resource_not_found"] }, noop),
    ).operations;
    expect(op).toMatchObject({ query: PageQuery, body: Item, status: 201, idempotent: true, errors: ["resource_not_found"], scope: "tasks:write" });
  });

  it("when a stream operation names no media type, then it accepts application/octet-stream", () => {
    const [op] = resource({ name: "items", scopes: "tasks" }, (r) =>
      r.op({ ...shape("POST", "/v1/items/upload", "uploadItem"), kind: "stream" }, noop),
    ).operations;
    expect(op).toMatchObject({ kind: "stream", contentTypes: ["application/octet-stream"] });
  });

  it("when an operation holds a secret but takes no Idempotency-Key, then resource() refuses it", () => {
    expect(() =>
      resource({ name: "items", scopes: "tasks" }, (r) => r.op({ ...shape("POST", "/v1/items", "createItem"), secretInResponse: true }, noop)),
    ).toThrow("POST /v1/items: secretInResponse is for an idempotent operation");
  });

  it("when a stream operation asks for an Idempotency-Key, then resource() refuses it", () => {
    expect(() =>
      resource({ name: "items", scopes: "tasks" }, (r) => r.op({ ...shape("POST", "/v1/items", "uploadItem"), kind: "stream", idempotent: true }, noop)),
    ).toThrow("POST /v1/items: a stream operation has no body schema and no Idempotency-Key");
  });
});

/**
 * Never called: compiled by `tsc -p tsconfig.test.json`, where a field the spec does not know (a
 * misspelt or retired option) must be an error rather than silently ignored.
 */
export function unknownFieldsDoNotCompile(r: ResourceBuilder): void {
  // @ts-expect-error serviceIdempotency is not an operation field
  r.op({ ...shape("POST", "/v1/items", "createItem"), idempotent: true, serviceIdempotency: true }, noop);
  // @ts-expect-error a misspelt field
  r.op({ ...shape("GET", "/v1/items", "listItems"), pagniated: true }, noop);
}
