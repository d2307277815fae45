/**
 * A minimal webhook receiver on node:http. Built with the client (tsconfig includes examples/):
 *
 *   cd clients/typescript && npm ci && npm run build
 *   WEBHOOK_SECRET=whsec_... PORT=9000 node dist/examples/webhook-receiver.js
 *
 * WEBHOOK_SECRET holds the endpoint's secret, or two separated by a space while one is rotated.
 * Each request is verified before anything else, answered at once (204; 400 or 401 when it does
 * not verify), and acted on after the answer. The product delivers at least once, and the same
 * event always with the same webhook-id: a repeat is answered 204 and not acted on again. This
 * example remembers ids in memory; a real receiver stores them under a unique key in its database
 * (in the transaction that records the work to do), so that a restart or a second process still
 * knows them. In your own project, import from "@leaderboard/client".
 */
import { createServer, type IncomingMessage } from "node:http";

import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "../src/index.js";

const secrets = (process.env["WEBHOOK_SECRET"] ?? "").split(/\s+/).filter(Boolean);
if (secrets.length === 0) throw new Error("WEBHOOK_SECRET is not set");
const MAX_BODY_BYTES = 1 << 20;
const seen = new Set<string>();

function act(event: WebhookEvent): void {
  const data = event.data as Record<string, string | number>;
  if (event.type === "period.settled") {
    console.log(`period settled: ${data["game"]}/${data["leaderboard"]} ${data["period_id"]}, ${data["granted"]} granted`);
  } else if (event.type === "reward.granted") {
    console.log(`reward granted: ${data["player_id"]} gets ${JSON.stringify(data["reward"])} (${data["grant_id"]})`);
  } // other types: nothing to do (ignore what you do not know)
}

async function rawBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

const server = createServer(async (req, res) => {
  if (req.method !== "POST") return res.writeHead(405).end();
  const body = await rawBody(req); // the raw bytes: verify them before parsing anything
  if (body === null) return res.writeHead(413).end();
  let event: WebhookEvent;
  try {
    event = await verifyWebhook(secrets, body, req.headers);
  } catch (error) {
    console.error(`refused: ${error instanceof Error ? error.message : error}`);
    return res.writeHead(error instanceof WebhookVerificationError ? error.status : 500).end();
  }
  const id = String(req.headers["webhook-id"]);
  const repeat = seen.has(id);
  seen.add(id);
  res.writeHead(204).end();
  if (!repeat) act(event);
});

server.listen(Number(process.env["PORT"] ?? 9000), () => {
  const address = server.address();
  console.log(`listening on :${typeof address === "object" && address ? address.port : address}`);
});
