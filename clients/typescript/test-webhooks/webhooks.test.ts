/**
 * verifyWebhook, with no server: `npm run test:webhooks`. The fixed vector below was signed in
 * Python with the Standard Webhooks library (standardwebhooks' Webhook.sign), which signs as the
 * product does (clients/python/tests/test_webhooks.py checks both, and that this file holds
 * the vector they make), so both languages agree on it byte for byte. Other requests are
 * signed here with node:crypto, the same algorithm.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";

import { LeaderboardError, verifyWebhook, WebhookVerificationError, type WebhookEvent } from "../src/index.js";

// The fixed vector: Webhook(SECRET).sign(MSG_ID, TS, BODY) and Webhook(OLD_SECRET).sign(...) in Python.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET = "whsec_QhYaBIe9Q4D4pVYPm4a0Xw2yv3Dx0PSjyvRkJ7O6kFg=";
const MSG_ID = "evt_019cd2a8a1e000c0ffee00000001";
const TS = 1795694700;
const BODY =
  '{"id":"evt_019cd2a8a1e000c0ffee00000001","type":"reward.granted","version":1,"created_at":"2026-11-30T00:02:00.000Z","data":{"game":"tetris","leaderboard":"weekly-cup","window":"weekly","period_id":"2026-W48","player_id":"zoë","grant_id":"grant_h7Kq2XbN0vLw9RtYc3ZpEg","cohort":"","tier":"","rank":1,"reward":{"coins":500,"badge":"cup-winner"},"granted_at":"2026-11-30T00:02:00.000Z","expires_at":"2026-12-30T00:02:00.000Z"}}';
const SIGNATURE = "v1,BQAfh0itiH+g7rZTqr7aL5WBRhhTH92yxvAzAMX5O3k=";
const OLD_SIGNATURE = "v1,NQYhCXqjVKgdIazzn//sadabJQ7KRPd5q7FgvzWKlbQ=";

const HEADERS = { "webhook-id": MSG_ID, "webhook-timestamp": String(TS), "webhook-signature": SIGNATURE };
const AT_TS = { now: TS };

/** The same algorithm with node:crypto: an independent signer for requests the vector lacks. */
function sign(secret: string, msgId: string, timestamp: number, body: string | Uint8Array): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const mac = createHmac("sha256", key).update(`${msgId}.${timestamp}.`).update(body).digest("base64");
  return `v1,${mac}`;
}

async function refusal(promise: Promise<unknown>): Promise<WebhookVerificationError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    return error;
  }
  assert.fail("verified a request it should have refused");
}

test("it verifies the vector the Python library signed, whatever form the body and headers take", async () => {
  const event: WebhookEvent = await verifyWebhook(SECRET, BODY, HEADERS, AT_TS);

  assert.equal(event.id, MSG_ID);
  assert.equal(event.type, "reward.granted");
  assert.deepEqual(event.data["reward"], { coins: 500, badge: "cup-winner" });
  assert.equal(event.data["player_id"], "zoë");
  const bytes = new TextEncoder().encode(BODY);
  assert.deepEqual(await verifyWebhook(SECRET, bytes, HEADERS, AT_TS), event);
  assert.deepEqual(await verifyWebhook(SECRET, Buffer.from(BODY), new Headers(HEADERS), AT_TS), event);
  const titled = { "Webhook-Id": MSG_ID, "Webhook-Timestamp": String(TS), "Webhook-Signature": SIGNATURE };
  assert.deepEqual(await verifyWebhook(SECRET, BODY, titled, AT_TS), event);
  // node:http's req.headers: lower-case names, a value possibly an array.
  const incoming = { ...HEADERS, "webhook-id": [MSG_ID], "content-length": undefined };
  assert.deepEqual(await verifyWebhook(SECRET, BODY, incoming, AT_TS), event);
});

test("node:crypto signs the vector as Python did", () => {
  assert.equal(sign(SECRET, MSG_ID, TS, BODY), SIGNATURE);
  assert.equal(sign(OLD_SECRET, MSG_ID, TS, Buffer.from(BODY)), OLD_SIGNATURE);
});

test("a receiver mid-rotation verifies with either secret and refuses a third", async () => {
  const rotating = { ...HEADERS, "webhook-signature": `${SIGNATURE} ${OLD_SIGNATURE}` };
  const other = "whsec_" + Buffer.alloc(32, 7).toString("base64");

  assert.equal((await verifyWebhook(OLD_SECRET, BODY, rotating, AT_TS)).id, MSG_ID);
  assert.equal((await verifyWebhook(SECRET, BODY, rotating, AT_TS)).id, MSG_ID);
  assert.equal((await verifyWebhook([other, OLD_SECRET], BODY, rotating, AT_TS)).id, MSG_ID);
  assert.equal((await verifyWebhook([OLD_SECRET, SECRET], BODY, HEADERS, AT_TS)).id, MSG_ID);
  const error = await refusal(verifyWebhook([other], BODY, rotating, AT_TS));
  assert.equal(error.code, "no_matching_signature");
});

test("it refuses a tampered body, id or timestamp, and a wrong secret, with 401", async () => {
  const tampered = BODY.replace('"coins":500', '"coins":900');
  const error = await refusal(verifyWebhook(SECRET, tampered, HEADERS, AT_TS));

  assert.equal(error.status, 401);
  assert.equal(error.code, "no_matching_signature");
  assert.ok(error instanceof LeaderboardError);
  assert.equal(error.message, "401 no_matching_signature: no v1 signature made with the secret(s)");
  for (const headers of [
    { ...HEADERS, "webhook-id": "evt_other" },
    { ...HEADERS, "webhook-timestamp": String(TS + 1) },
  ]) {
    assert.equal((await refusal(verifyWebhook(SECRET, BODY, headers, AT_TS))).code, "no_matching_signature");
  }
  assert.equal((await refusal(verifyWebhook(OLD_SECRET, BODY, HEADERS, AT_TS))).code, "no_matching_signature");
});

test("it refuses a timestamp outside the tolerance either way", async () => {
  assert.equal((await verifyWebhook(SECRET, BODY, HEADERS, { now: TS + 300 })).id, MSG_ID);
  assert.equal((await verifyWebhook(SECRET, BODY, HEADERS, { now: TS - 300 })).id, MSG_ID);
  for (const now of [TS + 301, TS - 301, TS + 3600]) {
    const error = await refusal(verifyWebhook(SECRET, BODY, HEADERS, { now }));
    assert.equal(error.status, 401);
    assert.equal(error.code, "timestamp_out_of_tolerance");
  }
  assert.equal((await verifyWebhook(SECRET, BODY, HEADERS, { now: TS + 3600, toleranceSecs: 7200 })).id, MSG_ID);
  assert.equal((await verifyWebhook(SECRET, BODY, HEADERS, { now: new Date((TS + 60) * 1000) })).id, MSG_ID);
});

test("it verifies a request signed now on the clock, and refuses one an hour old", async () => {
  const now = Math.floor(Date.now() / 1000);
  const fresh = { "webhook-id": MSG_ID, "webhook-timestamp": String(now), "webhook-signature": sign(SECRET, MSG_ID, now, BODY) };
  const old = { ...fresh, "webhook-timestamp": String(now - 3600), "webhook-signature": sign(SECRET, MSG_ID, now - 3600, BODY) };

  assert.equal((await verifyWebhook(SECRET, BODY, fresh)).id, MSG_ID);
  assert.equal((await refusal(verifyWebhook(SECRET, BODY, old))).code, "timestamp_out_of_tolerance");
});

test("it refuses missing or malformed headers with 400", async () => {
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"] as const) {
    const without: Record<string, string> = { ...HEADERS };
    delete without[name];
    const error = await refusal(verifyWebhook(SECRET, BODY, without, AT_TS));
    assert.deepEqual([error.status, error.code, error.message], [400, "missing_headers", `400 missing_headers: missing ${name}`]);
    assert.equal((await refusal(verifyWebhook(SECRET, BODY, { ...HEADERS, [name]: " " }, AT_TS))).code, "missing_headers");
  }
  const none = await refusal(verifyWebhook(SECRET, BODY, {}, AT_TS));
  assert.equal(none.message, "400 missing_headers: missing webhook-id, webhook-timestamp, webhook-signature");
  for (const stamp of ["1795694700.0", "-1795694700", "1.7e9", "soon", "9".repeat(30)]) {
    const error = await refusal(verifyWebhook(SECRET, BODY, { ...HEADERS, "webhook-timestamp": stamp }, AT_TS));
    assert.deepEqual([error.status, error.code], [400, "invalid_timestamp"], stamp);
  }
});

test("it skips signatures of versions it does not know, and garbage", async () => {
  const mac = SIGNATURE.slice("v1,".length);
  for (const value of [`v1a,${mac}`, `v2,${mac}`, `V1,${mac}`, mac, "v1,", "v1,%%%", "garbage", `v1,${mac.slice(0, -4)}`]) {
    const error = await refusal(verifyWebhook(SECRET, BODY, { ...HEADERS, "webhook-signature": value }, AT_TS));
    assert.equal(error.code, "no_matching_signature", value);
  }
  const mixed = `v1a,${mac} garbage v1,%%% ${SIGNATURE}  v2,${mac}`;
  assert.equal((await verifyWebhook(SECRET, BODY, { ...HEADERS, "webhook-signature": mixed }, AT_TS)).id, MSG_ID);
});

test("a signed body that is not an event is refused with 400", async () => {
  const bodies: (string | Uint8Array)[] = ["not json", "[1, 2]", '{"type": "x"}', new Uint8Array([0xff, 0xfe])];
  for (const body of bodies) {
    const headers = { ...HEADERS, "webhook-signature": sign(SECRET, MSG_ID, TS, body) };
    const error = await refusal(verifyWebhook(SECRET, body, headers, AT_TS));
    assert.deepEqual([error.status, error.code], [400, "invalid_body"], String(body));
  }
});

test("it refuses to guess a secret", async () => {
  for (const secret of ["whsec_not base64!", "whsec_", ""]) {
    await assert.rejects(verifyWebhook(secret, BODY, HEADERS, AT_TS), { name: "TypeError", message: /not a webhook secret/ });
  }
  await assert.rejects(verifyWebhook([], BODY, HEADERS, AT_TS), { name: "TypeError", message: /no webhook secret/ });
  // Without its prefix, or unpadded, a secret is the same key (as the Python library takes it).
  assert.equal((await verifyWebhook(SECRET.slice("whsec_".length), BODY, HEADERS, AT_TS)).id, MSG_ID);
  const oldHeaders = { ...HEADERS, "webhook-signature": OLD_SIGNATURE };
  assert.equal((await verifyWebhook(OLD_SECRET.replace(/=+$/, ""), BODY, oldHeaders, AT_TS)).id, MSG_ID);
});
