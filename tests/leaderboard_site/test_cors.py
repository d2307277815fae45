"""Cross-origin reads: a page on another origin reads boards; nobody else, and no writes."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client
from playwright.sync_api import Browser

from core import apikeys
from tests.conftest import auth
from tests.live_server import asgi_live_server, browser  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

STUDIO = "https://studio.example"
BOARD = "/api/v1/games/cors/leaderboards/main/daily"


@pytest.fixture
def studio(settings: Any) -> None:
    settings.CORS_ALLOWED_ORIGINS = [STUDIO]


def test_it_answers_a_read_preflight_from_an_allowed_origin(studio: None, make_game: Any) -> None:
    make_game("cors")
    response = Client().options(
        BOARD,
        HTTP_ORIGIN=STUDIO,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="x-request-id",
    )

    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == STUDIO
    assert set(response["Access-Control-Allow-Methods"].split(", ")) == {"GET", "HEAD", "OPTIONS"}
    assert "x-request-id" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response


def test_it_lets_an_allowed_origin_read_and_see_the_request_id(studio: None, make_game: Any) -> None:
    make_game("cors")
    response = Client().get(BOARD, HTTP_ORIGIN=STUDIO)

    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == STUDIO
    assert "X-Request-ID" in response["Access-Control-Expose-Headers"]


def test_it_gives_no_cors_headers_to_other_origins_or_by_default(studio: None, make_game: Any, settings: Any) -> None:
    make_game("cors")
    stranger = Client().get(BOARD, HTTP_ORIGIN="https://elsewhere.example")
    settings.CORS_ALLOWED_ORIGINS = []
    default = Client().get(BOARD, HTTP_ORIGIN=STUDIO)

    assert stranger.status_code == default.status_code == 200  # same-origin use is unchanged
    assert "Access-Control-Allow-Origin" not in stranger
    assert "Access-Control-Allow-Origin" not in default


def test_it_never_opens_a_write_to_another_origin(studio: None, make_game: Any) -> None:
    game = make_game("cors")
    _, raw = apikeys.api_key_create(game=game, name="server")
    preflight = Client().options(
        "/api/v1/games/cors/leaderboards/main/scores",
        HTTP_ORIGIN=STUDIO,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )
    write = Client().post(
        "/api/v1/games/cors/leaderboards/main/scores",
        {"player_id": "ada", "score": 1},
        content_type="application/json",
        headers={**auth(raw), "Origin": STUDIO},
    )

    assert "POST" not in preflight["Access-Control-Allow-Methods"]
    assert "authorization" not in preflight["Access-Control-Allow-Headers"]
    assert write.status_code == 200  # a game server (no browser) is not affected...
    assert "Access-Control-Allow-Origin" not in write  # ...but a browser page could not read it


def test_it_lets_any_origin_read_with_a_star(settings: Any, make_game: Any) -> None:
    settings.CORS_ALLOW_ALL_ORIGINS = True
    make_game("cors")
    response = Client().get(BOARD, HTTP_ORIGIN="https://anyone.example")

    assert response["Access-Control-Allow-Origin"] == "*"


PAGE = """<!doctype html><meta charset="utf-8"><title>Studio site</title>
<ol id="board"></ol><p id="write"></p>
<script>
const api = new URLSearchParams(location.search).get("api");
fetch(api + "{board}", {{headers: {{"X-Request-ID": "studio-page-1"}}}})
  .then(r => r.json().then(body => [r, body]))
  .then(([r, body]) => {{
    for (const e of body.entries) {{
      const li = document.createElement("li");
      li.textContent = e.player_id + " " + e.score;
      document.getElementById("board").append(li);
    }}
    document.title = "read " + r.headers.get("X-Request-ID");
  }})
  .catch(() => {{ document.title = "read refused"; }});
fetch(api + "/api/v1/games/cors/leaderboards/main/scores", {{
  method: "POST", headers: {{"Content-Type": "application/json", "Authorization": "Bearer lb_guess"}},
  body: JSON.stringify({{player_id: "mallory", score: 999}})
}}).then(() => {{ document.getElementById("write").textContent = "write sent"; }})
  .catch(() => {{ document.getElementById("write").textContent = "write refused"; }});
</script>"""


@pytest.fixture
def other_origin(tmp_path: Path) -> Iterator[str]:
    """A plain static server on another port: another origin, as a studio's site would be."""
    (tmp_path / "index.html").write_text(PAGE.format(board=BOARD))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


@pytest.mark.browser
def test_it_lets_a_page_on_another_origin_read_a_board_but_not_write(
    make_game: Any,
    asgi_live_server: str,  # noqa: F811
    other_origin: str,
    browser: Browser,  # noqa: F811
    settings: Any,
) -> None:
    settings.CORS_ALLOWED_ORIGINS = [other_origin]
    game = make_game("cors")
    _, raw = apikeys.api_key_create(game=game, name="server")
    for player, score in (("ada", 30), ("bob", 20)):
        httpx.post(
            f"{asgi_live_server}/api/v1/games/cors/leaderboards/main/scores",
            json={"player_id": player, "score": score},
            headers=auth(raw),
        ).raise_for_status()

    page = browser.new_page()
    try:
        page.goto(f"{other_origin}/index.html?api={asgi_live_server}")
        page.wait_for_function("document.title.startsWith('read')")
        page.wait_for_function("document.getElementById('write').textContent !== ''")
        title = page.title()
        rows = page.locator("#board li").all_inner_texts()
        write = page.locator("#write").inner_text()
    finally:
        page.close()

    assert title == "read studio-page-1"  # the read, and its exposed request id
    assert rows == ["ada 30", "bob 20"]
    assert write == "write refused"  # the preflight did not allow it: nothing was sent
    standings = httpx.get(f"{asgi_live_server}{BOARD}").json()["entries"]
    assert [e["player_id"] for e in standings] == ["ada", "bob"]
