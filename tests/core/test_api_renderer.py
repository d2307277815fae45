"""The API's renderer (core/api.py): orjson writes what the stdlib's encoder wrote (the same
document, one datetime format), never a NaN a client cannot parse, and still renders what
orjson alone refuses."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from typing import Any

from django.test import RequestFactory
from pydantic import BaseModel

from core.api import _Encoder, _Renderer


class _Shown(BaseModel):
    name: str
    at: dt.datetime


def _render(data: Any) -> Any:
    raw = _Renderer().render(RequestFactory().get("/"), data, response_status=200)
    return json.loads(raw)  # strict below: the stdlib's parser reads it


def _stdlib(data: Any) -> Any:
    return json.loads(json.dumps(data, cls=_Encoder))


def test_it_writes_the_document_the_stdlib_encoder_wrote() -> None:
    at = dt.datetime(2026, 11, 25, 18, 30, 1, 598_123, tzinfo=dt.UTC)
    data = {
        "results": [{"player_id": "zoë 🏁", "score": -(2**53 - 1), "rank": 1, "metadata": {"k": [1, 2.5, None]}}],
        "at": at,
        "day": at.date(),
        "id": uuid.UUID(int=7),
        "amount": decimal.Decimal("1.50"),
        "model": _Shown(name="Ann", at=at),
        "empty": {},
    }
    assert _render(data) == _stdlib(data)
    assert _render({"at": at})["at"] == "2026-11-25T18:30:01.598Z"


def test_it_writes_a_non_finite_number_as_null() -> None:
    raw = _Renderer().render(RequestFactory().get("/"), {"avg": float("nan"), "max": float("inf")}, response_status=200)
    assert json.loads(raw, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name))) == {
        "avg": None,
        "max": None,
    }


def test_it_still_renders_an_integer_past_64_bits_and_never_a_nan() -> None:
    assert _render({"total": 2**70}) == {"total": 2**70}
    raw = _Renderer().render(RequestFactory().get("/"), {"total": 2**70, "avg": [float("nan")]}, response_status=200)
    assert json.loads(raw, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name))) == {
        "total": 2**70,
        "avg": [None],
    }
