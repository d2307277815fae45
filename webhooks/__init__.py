"""Webhooks: every domain event of a game delivered to the studio's servers, signed by the
Standard Webhooks format, durable and replayable (docs/webhooks.md)."""
