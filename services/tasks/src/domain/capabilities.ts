import { createHmac, timingSafeEqual } from "node:crypto";
import { AppError } from "@tasksvc/errors";
import { z } from "zod";

/**
 * Capabilities for the gateway's streaming routes (decision 0016): the URL itself authorizes one
 * upload or download, so it carries what it grants and a MAC with a key only the tasks service
 * holds (in its schema). Format: base64url(JSON payload) "." base64url(HMAC-SHA256 of that
 * payload text). Not encrypted: the payload names the organization and key, nothing secret.
 */
const Payload = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("upload"), organization_id: z.string(), file_key: z.string(), expires_at: z.number().int() }),
  z.object({ kind: z.literal("download"), organization_id: z.string(), file_key: z.string(), attachment_id: z.string(), expires_at: z.number().int() }),
]);
export type Capability = z.infer<typeof Payload>;
export type CapabilityKind = Capability["kind"];

export const linkInvalid = () => new AppError("link_invalid", "This link is invalid or has expired; ask for a new one.");

export function capabilities(key: Buffer, now: () => number = Date.now) {
  const mac = (text: string) => createHmac("sha256", key).update(text).digest();
  return {
    mint(c: Capability): string {
      const text = Buffer.from(JSON.stringify(c)).toString("base64url");
      return `${text}.${mac(text).toString("base64url")}`;
    },

    /** The payload of an authentic, unexpired capability of this kind; anything else is 403 link_invalid. */
    verify<K extends CapabilityKind>(token: string, kind: K): Extract<Capability, { kind: K }> {
      const [text, sig, extra] = token.split(".");
      if (text === undefined || sig === undefined || extra !== undefined) throw linkInvalid();
      const given = Buffer.from(sig, "base64url");
      const expected = mac(text);
      // Equal lengths first: timingSafeEqual throws otherwise (and the length is public anyway).
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw linkInvalid();
      let parsed: z.ZodSafeParseResult<Capability>;
      try {
        parsed = Payload.safeParse(JSON.parse(Buffer.from(text, "base64url").toString("utf8")));
      } catch {
        throw linkInvalid();
      }
      if (!parsed.success || parsed.data.kind !== kind || parsed.data.expires_at <= now()) throw linkInvalid();
      return parsed.data as Extract<Capability, { kind: K }>;
    },
  };
}
export type Capabilities = ReturnType<typeof capabilities>;
