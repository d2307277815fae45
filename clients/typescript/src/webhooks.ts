/**
 * Verifying the product's webhooks on the receiving side, as the Standard Webhooks specification
 * says (standardwebhooks.com).
 *
 * Each request carries `webhook-id` (the event's id, the same on every retry), `webhook-timestamp`
 * (unix seconds) and `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
 * keyed by the base64-decoded part of the endpoint's secret after `whsec_`; space-separated, one
 * per secret, while a rotated-out secret still signs.
 *
 * Web Crypto (`globalThis.crypto.subtle`), not node:crypto: the package also runs in browsers
 * (its reads), and importing node:crypto would break it there; receivers run on servers, where
 * Node 18+ (and Deno, Bun, edge runtimes) offer the same API. Its HMAC `verify` compares in
 * constant time. Web Crypto is asynchronous, so is `verifyWebhook`.
 *
 *   const event = await verifyWebhook(process.env.WEBHOOK_SECRET!, rawBody, req.headers);
 */
import { LeaderboardError } from "./errors.js";

const SECRET_PREFIX = "whsec_";
const SIGNATURE_VERSION = "v1";
/** The specification's tolerance: a request signed more than five minutes from now is refused. */
export const DEFAULT_TOLERANCE_SECS = 300;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DIGITS = /^[0-9]{1,15}$/;
const HEADER_NAMES = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/** The event envelope (docs/events.md): `data` holds the type's payload. */
export interface WebhookEvent<Data = Record<string, unknown>> {
  id: string;
  type: string;
  version: number;
  created_at: string;
  data: Data;
}

export interface VerifyWebhookOptions {
  /** How far the request's timestamp may be from now, either way (default 300 s). */
  toleranceSecs?: number;
  /** Now, as unix seconds or a Date (for tests); the clock by default. */
  now?: number | Date;
}

/**
 * A request that must not be acted on. `status` is what to answer it with (400: headers missing or
 * malformed, or a body that is not an event; 401: a timestamp outside the tolerance, or no
 * signature made with the secret(s)); `code` says which: `missing_headers`, `invalid_timestamp`,
 * `timestamp_out_of_tolerance`, `no_matching_signature`, `invalid_body`.
 */
export class WebhookVerificationError extends LeaderboardError {
  constructor(status: 400 | 401, code: string, message: string) {
    super(status, code, message);
    this.name = "WebhookVerificationError";
  }
}

type HeaderValues = Headers | Record<string, string | string[] | undefined>;

function base64Bytes(encoded: string): Uint8Array<ArrayBuffer> | null {
  if (!BASE64.test(encoded)) return null;
  let binary: string;
  try {
    binary = atob(encoded + "=".repeat((4 - (encoded.length % 4)) % 4));
  } catch {
    return null;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function secretKey(secret: string): Uint8Array<ArrayBuffer> {
  const trimmed = secret.trim();
  const encoded = trimmed.startsWith(SECRET_PREFIX) ? trimmed.slice(SECRET_PREFIX.length) : trimmed;
  const key = base64Bytes(encoded);
  if (key === null) throw new TypeError("not a webhook secret: expected whsec_ and base64");
  if (key.length === 0) throw new TypeError("not a webhook secret: it is empty");
  return key;
}

function header(headers: HeaderValues, name: string): string {
  if (typeof Headers !== "undefined" && headers instanceof Headers) return headers.get(name) ?? "";
  const record = headers as Record<string, string | string[] | undefined>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() !== name) continue;
    return (Array.isArray(value) ? value[0] : value) ?? "";
  }
  return "";
}

/** The header's `v1` signatures, decoded; others (unknown versions, garbage) are skipped. */
function signatures(value: string): Uint8Array<ArrayBuffer>[] {
  const found: Uint8Array<ArrayBuffer>[] = [];
  for (const token of value.split(/\s+/)) {
    const comma = token.indexOf(",");
    if (comma < 0 || token.slice(0, comma) !== SIGNATURE_VERSION) continue;
    const bytes = base64Bytes(token.slice(comma + 1));
    if (bytes !== null && bytes.length > 0) found.push(bytes);
  }
  return found;
}

function nowSecs(now: number | Date | undefined): number {
  if (now === undefined) return Date.now() / 1000;
  return now instanceof Date ? now.getTime() / 1000 : now;
}

/**
 * The event of a webhook request, once its signature and timestamp check out.
 *
 * `secrets`: the endpoint's secret (`whsec_…`), or several while one is being rotated (any of
 * them verifies). `body`: the request's raw body exactly as received, bytes (a Buffer is one) or
 * its text (never a body parsed and serialized again). `headers`: a fetch `Headers`, or a record
 * such as node:http's `req.headers` (names in any case).
 *
 * Rejects with `WebhookVerificationError` for a request to refuse, `TypeError` for a secret that
 * is not one (a configuration error, not the request's).
 */
export async function verifyWebhook<Data = Record<string, unknown>>(
  secrets: string | readonly string[],
  body: string | Uint8Array,
  headers: HeaderValues,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent<Data>> {
  const list = typeof secrets === "string" ? [secrets] : [...secrets];
  if (list.length === 0) throw new TypeError("no webhook secret given");
  const keys = list.map(secretKey);
  if (typeof body !== "string" && !(body instanceof Uint8Array)) {
    throw new TypeError("body must be the raw request body: a Uint8Array (or Buffer) or its text");
  }

  const missing = HEADER_NAMES.filter((name) => header(headers, name).trim() === "");
  if (missing.length > 0) throw new WebhookVerificationError(400, "missing_headers", `missing ${missing.join(", ")}`);
  const msgId = header(headers, "webhook-id");
  const stamp = header(headers, "webhook-timestamp").trim();
  if (!DIGITS.test(stamp)) {
    throw new WebhookVerificationError(400, "invalid_timestamp", "webhook-timestamp is not unix seconds");
  }
  const timestamp = Number(stamp);
  const tolerance = options.toleranceSecs ?? DEFAULT_TOLERANCE_SECS;
  if (Math.abs(nowSecs(options.now) - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      401,
      "timestamp_out_of_tolerance",
      `webhook-timestamp is more than ${tolerance} s from now`,
    );
  }

  const encoder = new TextEncoder();
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const prefix = encoder.encode(`${msgId}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + bytes.length);
  signed.set(prefix);
  signed.set(bytes, prefix.length);
  const given = signatures(header(headers, "webhook-signature"));
  // Every pair is checked, each by Web Crypto's verify (a constant-time comparison): how long it
  // takes does not depend on which signature or how much of one matched.
  let matched = false;
  for (const raw of keys) {
    const key = await globalThis.crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    for (const candidate of given) {
      if (await globalThis.crypto.subtle.verify("HMAC", key, candidate, signed)) matched = true;
    }
  }
  if (!matched) {
    throw new WebhookVerificationError(401, "no_matching_signature", "no v1 signature made with the secret(s)");
  }

  let event: unknown;
  try {
    event = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new WebhookVerificationError(400, "invalid_body", "the body is not JSON");
  }
  if (!isEnvelope(event)) throw new WebhookVerificationError(400, "invalid_body", "the body is not an event envelope");
  return event as WebhookEvent<Data>;
}

function isEnvelope(value: unknown): value is WebhookEvent<unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const { type, data } = value as Record<string, unknown>;
  return typeof type === "string" && typeof data === "object" && data !== null && !Array.isArray(data);
}
