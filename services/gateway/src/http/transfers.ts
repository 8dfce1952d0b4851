import type { Readable } from "node:stream";
import { attachmentDisposition, BlobSizeMismatch, type BlobStore } from "@tasksvc/blobs";
import { systemContext, type RpcContext } from "@tasksvc/contracts";
import { AppError, fieldError } from "@tasksvc/errors";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Clients } from "../clients.js";
import { type LinkRate, linkLimiter } from "./link-limits.js";

export interface LinkRouteOptions {
  linkRate?: LinkRate | null;
  trustProxy?: false | string[];
}

export interface TransferOptions {
  /** Null with S3: links go to S3 itself, not here. */
  store: BlobStore | null;
  clients: Clients;
  linkRate?: LinkRate | null | undefined;
}

/**
 * The bytes are a user's, served from the API's own origin: `nosniff` keeps a browser to the
 * stored type, and the sandbox policy keeps a document rendered anyway from running script,
 * reaching this origin's storage or loading anything.
 */
export const DOWNLOAD_HEADERS = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "sandbox; default-src 'none'",
  "cache-control": "private, no-store",
} as const;

/** A capability is the whole authorization of these routes: no credential, no organization in the context. */
const linkCtx = (req: FastifyRequest): RpcContext => systemContext(String(req.id));

/** Anything else is refused before a service is asked. */
const CAPABILITY = /^[A-Za-z0-9_.-]{16,4096}$/;

function capabilityOf(req: FastifyRequest<{ Params: { capability: string } }>): string {
  const c = req.params.capability;
  if (!CAPABILITY.test(c)) throw new AppError("link_invalid", "This link is not valid; start a new upload or ask for a new download link.");
  return c;
}

/** Bytes stream between the client's socket and the object store: they never cross NATS request/reply and never sit in memory whole (decision 0016). */
export function registerTransfers(app: FastifyInstance, o: TransferOptions): void {
  const store = o.store;
  if (!store) return;
  app.register(async (scope) => {
    // Any media type arrives as the unread request stream (the ticket's type is what is stored).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
    const rate = o.linkRate;
    if (rate) {
      // Before the body is read or any service asked; req.ip follows TRUST_PROXY.
      const limiter = linkLimiter(rate);
      scope.addHook("onRequest", async (req) => {
        const wait = limiter.take(req.ip);
        if (wait > 0) {
          throw new AppError(
            "rate_limited",
            `Too many requests to upload and download links from this address (at most ${rate.limit} per ${rate.windowMs / 1000} s); retry after the Retry-After delay.`,
            { retryAfter: wait },
          );
        }
      });
    }

    scope.put<{ Params: { capability: string } }>("/v1/uploads/:capability", async (req, reply) => {
      const claim = await o.clients.tasks.call("claimUpload", { capability: capabilityOf(req) }, linkCtx(req));
      const release = () =>
        o.clients.tasks.call("releaseUpload", { file_key: claim.file_key }, linkCtx(req)).catch((err: unknown) => req.log.warn({ err }, "upload not released"));
      const declared = req.headers["content-length"];
      if (declared !== undefined && Number(declared) !== claim.size) {
        await release();
        throw sizeRefusal(Number(declared) > claim.size ? "too_large" : "too_small", claim.size);
      }
      const body = (req.body as Readable | undefined) ?? req.raw;
      try {
        await store.put(claim.file_key, body, { size: claim.size, contentType: claim.content_type });
      } catch (e) {
        await release();
        if (e instanceof BlobSizeMismatch) throw sizeRefusal(e.kind, claim.size);
        throw e;
      }
      // A report that does not arrive leaves the claim to its lease: a later PUT may then replace
      // the same bytes, never leave a partial file (the store writes an object whole or not at all).
      await o.clients.tasks
        .call("completeUpload", { file_key: claim.file_key }, linkCtx(req))
        .catch((err: unknown) => req.log.warn({ err }, "upload completion not recorded"));
      return reply.code(200).send({ file_key: claim.file_key, size: claim.size });
    });

    scope.get<{ Params: { capability: string } }>("/v1/downloads/:capability", async (req, reply) => {
      const d = await o.clients.tasks.call("openDownload", { capability: capabilityOf(req) }, linkCtx(req));
      const got = await store.get(d.file_key);
      if (!got) throw new AppError("resource_not_found", "The file's bytes are gone.");
      return reply
        .header("content-type", d.content_type)
        .header("content-length", String(got.info.size))
        .header("content-disposition", attachmentDisposition(d.file_name))
        .headers(DOWNLOAD_HEADERS)
        .send(got.body);
    });
  });
}

function sizeRefusal(kind: BlobSizeMismatch["kind"], size: number): AppError {
  return kind === "too_large"
    ? new AppError("payload_too_large", `The body is longer than the ${size} bytes declared when the upload started.`)
    : fieldError("/size", `The body is shorter than the ${size} bytes declared when the upload started; PUT the whole file again.`);
}
