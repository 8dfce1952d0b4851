import { api, eventually, factories, gatewayUrl, type S3Server, type StartedStack, startS3Server, startStack } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allTasks, finished, startImport } from "./import-steps.js";

// An import with BLOB_STORE=s3://…: the upload link is a presigned S3 URL the client PUTs to
// directly, and the job reads the file from the bucket; the file goes once the import is done.
let s3: S3Server;
let stack: StartedStack;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  s3 = await startS3Server("imports");
  process.env["AWS_ACCESS_KEY_ID"] = s3.credentials.accessKeyId;
  process.env["AWS_SECRET_ACCESS_KEY"] = s3.credentials.secretAccessKey;
  stack = await startStack({ env: { BLOB_STORE: s3.blobStoreUrl }, replicas: { gateway: 1, keys: 1, tasks: 1 } });
  f = factories(stack);
});

afterAll(async () => {
  await f?.close();
  await stack?.stop();
  await s3?.stop();
});

describe("imports, S3 store", () => {
  it("when a CSV file is PUT to its presigned URL and imported, then its rows are tasks and its object is gone afterwards", async () => {
    const gw = api(gatewayUrl(stack));
    const t = await f.tenant();
    const csv = "title,priority\nfrom s3,HIGH\nsecond,LOW\n";
    const ticket = await gw.post("/v1/imports/uploads", { file_name: "s3.csv", content_type: "text/csv", size: csv.length }, { token: t.apiKey });
    expect(ticket.status, ticket.text).toBe(201);
    expect(ticket.body.upload_url.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
    // Not uploaded yet: refused at /file_key.
    const early = await startImport(gw, t, ticket.body.file_key);
    expect([early.status, early.body.errors?.[0]?.pointer], early.text).toEqual([400, "/file_key"]);
    const put = await fetch(ticket.body.upload_url, { method: "PUT", body: csv, headers: { "content-type": "text/csv" } });
    expect(put.status, await put.text()).toBe(200);
    const object = `${s3.endpoint}/${s3.bucket}/${ticket.body.file_key}`;
    expect((await fetch(object)).status).toBe(200);
    const started = await startImport(gw, t, ticket.body.file_key);
    expect(started.status, started.text).toBe(202);
    expect(await finished(gw, t, started.body.id)).toMatchObject({ status: "succeeded", counts: { created: 2, failed: 0 } });
    expect((await allTasks(gw, t)).map((x) => [x.title, x["priority"]]).sort()).toEqual([
      ["from s3", "HIGH"],
      ["second", "LOW"],
    ]);
    await eventually(async () => (await fetch(object)).status === 404, { what: "the imported file to be deleted" });
  });
});
