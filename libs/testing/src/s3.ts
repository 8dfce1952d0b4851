import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";

export interface S3Server {
  endpoint: string;
  bucket: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  blobStoreUrl: string;
  stop(): Promise<void>;
}

// s3rver's continuation tokens need OpenSSL 3's legacy provider, which can only be switched on when a process starts: so a child process.
const SERVE = `
  const S3rver = require(process.argv[1]);
  new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: process.argv[2], configureBuckets: [{ name: process.argv[3] }] })
    .run()
    .then((a) => console.log(JSON.stringify(a)), (e) => { console.error(e); process.exit(1); });
`;

/** It checks no signatures: a presigned URL's signed length and type are not enforced as S3 does. */
export async function startS3Server(bucket = "test-bucket"): Promise<S3Server> {
  const dir = await mkdtemp(join(tmpdir(), "tasksvc-s3-"));
  const server: ChildProcess = spawn(
    process.execPath,
    ["--openssl-legacy-provider", "-e", SERVE, createRequire(import.meta.url).resolve("s3rver"), dir, bucket],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const exited = once(server, "exit").then(([code]) => Promise.reject(new Error(`s3rver exited with ${code}`)));
  const [line] = await Promise.race([once(createInterface({ input: server.stdout ?? Readable.from([]) }), "line"), exited]);
  const { address, port } = JSON.parse(String(line)) as { address: string; port: number };
  const endpoint = `http://${address}:${port}`;
  return {
    endpoint,
    bucket,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    blobStoreUrl: `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1`,
    async stop() {
      if (server.exitCode === null && server.signalCode === null) {
        const exit = once(server, "exit");
        server.kill();
        await exit;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
