"""The export's 200 in the OpenAPI schema: a file, not JSON, so declared by hand."""

from __future__ import annotations

from typing import Any

_CSV_EXAMPLE = (
    "rank,player_id,display_name,score,shown,metadata\r\n"
    '1,ada,Ada,1200,"1,200","{""car"":""red""}"\r\n'
    "2,bob,Bob,900,900,\r\n"
)
_JSONL_EXAMPLE = (
    '{"rank":1,"player_id":"ada","display_name":"Ada","score":1200,"shown":"1,200","metadata":{"car":"red"}}\n'
    '{"rank":2,"player_id":"bob","display_name":"Bob","score":900,"shown":"900","metadata":null}\n'
)

EXPORT_200: dict[str, Any] = {
    "description": "The period's entries in board order, streamed as an attachment.",
    "headers": {"Content-Disposition": {"schema": {"type": "string"}, "description": "attachment; filename=…"}},
    "content": {
        "text/csv": {"schema": {"type": "string"}, "example": _CSV_EXAMPLE},
        "application/jsonl": {"schema": {"type": "string"}, "example": _JSONL_EXAMPLE},
    },
}
