"""The webhooks' writes: endpoints (endpoints.py), an event's deliveries (enqueue.py), the
delivery run (delivery.py and sending.py), replays (replay.py) and upkeep (sweep.py)."""
