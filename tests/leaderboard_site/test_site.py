"""Site-wide details: the icon at the root, and one log line per refused request."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_it_serves_a_real_icon_at_favicon_ico():
    response = Client().get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert "max-age=86400" in response["Cache-Control"]


def _consoles(name: str) -> list[logging.Handler]:
    """The console handlers a record of logger ``name`` reaches (pytest's own capture aside)."""
    found: list[logging.Handler] = []
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None:
        found += [h for h in logger.handlers if type(h) is logging.StreamHandler]
        logger = logger.parent if logger.propagate else None
    return found


def test_it_logs_a_refused_request_once():
    # Django adds a console handler of its own for DEBUG (make run); "Not Found: /x"
    # and "Bad Request: /x" are django.request records.
    assert len(_consoles("django.request")) == 1
