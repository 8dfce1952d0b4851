// Attachment upload scenario of the benchmark (issue 12), run by run.mjs on its stack with the
// default store (BLOB_STORE=nats: bytes stream through the gateway into JetStream).
//
// (a) 20 concurrent clients, each looping start → PUT 1 MiB → register: files/s, MiB/s, and the
//     p50/p99 of one whole file (three requests).
// (b) one 200 MiB file streamed through the gateway: the gateway's resident memory sampled every
//     20 ms, against its idle RSS just before (the target: under 100 MiB above idle).
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import { Readable } from "node:stream";

const CLIENTS = Number(process.env.BENCH_UPLOAD_CLIENTS ?? 20);
const FILE_BYTES = 1024 * 1024;
const BIG_BYTES = 200 * 1024 * 1024;
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

const quantile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** One request; the body is a Buffer, a Readable, or JSON. Resolves {status, body}. */
function request(url, { method, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const json = body !== undefined && !Buffer.isBuffer(body) && !(body instanceof Readable);
    const payload = json ? Buffer.from(JSON.stringify(body)) : body;
    const h = { ...headers, ...(json ? { "content-type": "application/json" } : {}) };
    if (Buffer.isBuffer(payload)) h["content-length"] = payload.length;
    const req = http.request(url, { method, agent, headers: h }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode, body: text ? JSON.parse(text) : undefined, text });
      });
    });
    req.on("error", reject);
    if (payload instanceof Readable) payload.pipe(req);
    else req.end(payload);
  });
}

/** start → PUT → register one file; throws on any unexpected status. */
async function uploadOne(gateway, key, taskId, bytes, contentType = "application/octet-stream") {
  const auth = { authorization: `Bearer ${key}` };
  const name = `bench-${randomUUID()}.bin`;
  const size = Buffer.isBuffer(bytes) ? bytes.length : bytes.size;
  const s = await request(`${gateway}/v1/tasks/${taskId}/attachments/uploads`, {
    method: "POST",
    headers: auth,
    body: { file_name: name, content_type: contentType, size },
  });
  if (s.status !== 201) throw new Error(`upload-start ${s.status}: ${s.text}`);
  const body = Buffer.isBuffer(bytes) ? bytes : bytes.stream();
  const put = await request(s.body.upload_url, { method: "PUT", headers: { "content-type": contentType, "content-length": size }, body });
  if (put.status !== 200) throw new Error(`PUT ${put.status}: ${put.text}`);
  const r = await request(`${gateway}/v1/tasks/${taskId}/attachments`, {
    method: "POST",
    headers: auth,
    body: { file_name: name, file_key: s.body.file_key, content_type: contentType, size },
  });
  if (r.status !== 201) throw new Error(`register ${r.status}: ${r.text}`);
}

const rssMiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;

export async function uploadScenarios({ gateway, key, gatewayPid, duration, warmup, log }) {
  const auth = { authorization: `Bearer ${key}` };
  const task = await request(`${gateway}/v1/tasks`, { method: "POST", headers: auth, body: { title: "Upload benchmark" } });
  if (task.status !== 201) throw new Error(`task create ${task.status}: ${task.text}`);
  const file = randomBytes(FILE_BYTES);

  log(`bench: uploads (a) ${CLIENTS} clients, 1 MiB files …`);
  const run = async (seconds, latencies) => {
    const end = Date.now() + seconds * 1000;
    let files = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (Date.now() < end) {
          const t0 = performance.now();
          await uploadOne(gateway, key, task.body.id, file);
          latencies?.push(performance.now() - t0);
          files += 1;
        }
      }),
    );
    return files;
  };
  await run(warmup);
  const latencies = [];
  const t0 = Date.now();
  const files = await run(duration, latencies);
  const seconds = (Date.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const a = { files: files / seconds, mibPerSecond: files / seconds, p50: quantile(latencies, 50), p99: quantile(latencies, 99) };

  log("bench: uploads (b) one 200 MiB file through the gateway …");
  await new Promise((r) => setTimeout(r, 1000));
  const idle = rssMiB(gatewayPid);
  let peak = idle;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(gatewayPid));
  }, 20);
  const chunk = randomBytes(1024 * 1024);
  const big = {
    size: BIG_BYTES,
    stream: () =>
      Readable.from(
        (function* () {
          for (let i = 0; i < BIG_BYTES / chunk.length; i++) yield chunk;
        })(),
      ),
  };
  const b0 = performance.now();
  try {
    await uploadOne(gateway, key, task.body.id, big);
  } finally {
    clearInterval(sampler);
  }
  const bigSeconds = (performance.now() - b0) / 1000;
  return { clients: CLIENTS, a, b: { idle, peak, seconds: bigSeconds, mibPerSecond: BIG_BYTES / 1024 / 1024 / bigSeconds } };
}
