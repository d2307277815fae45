"""A minimal webhook receiver (standard library only, beside leaderboard_client):

    WEBHOOK_SECRET=whsec_... PORT=9000 python clients/python/examples/webhook_receiver.py

WEBHOOK_SECRET holds the endpoint's secret, or two separated by a space while one is rotated.
Each request is verified before anything else, answered at once (204; 400 or 401 when it does not
verify), and acted on after the answer. The product delivers at least once, and the same event
always with the same webhook-id: a repeat is answered 204 and not acted on again. This example
remembers ids in memory; a real receiver stores them under a unique key in its database (in the
transaction that records the work to do), so that a restart or a second process still knows them.
"""

from __future__ import annotations

import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from leaderboard_client.webhooks import WebhookEvent, WebhookVerificationError, verify

SECRETS = os.environ["WEBHOOK_SECRET"].split()
MAX_BODY_BYTES = 1 << 20
seen: set[str] = set()
seen_lock = threading.Lock()


def act(event: WebhookEvent) -> None:
    data = event["data"]
    if event["type"] == "period.settled":
        print(f"period settled: {data['game']}/{data['leaderboard']} {data['period_id']}, {data['granted']} granted")
    elif event["type"] == "reward.granted":
        print(f"reward granted: {data['player_id']} gets {data['reward']} ({data['grant_id']})")
    sys.stdout.flush()  # other types: nothing to do (ignore what you do not know)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.answer(413)
            return
        body = self.rfile.read(length)  # the raw bytes: verify them before parsing anything
        try:
            event = verify(SECRETS, body, dict(self.headers))
        except WebhookVerificationError as refused:
            print(f"refused: {refused}", file=sys.stderr)
            self.answer(refused.status)
            return
        with seen_lock:
            repeat = self.headers["webhook-id"] in seen
            seen.add(self.headers["webhook-id"])
        self.answer(204)
        if not repeat:
            act(event)

    def answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


if __name__ == "__main__":
    server = ThreadingHTTPServer(("", int(os.environ.get("PORT", "9000"))), Receiver)
    print(f"listening on :{server.server_address[1]}", flush=True)
    server.serve_forever()
