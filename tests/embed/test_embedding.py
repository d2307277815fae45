"""A game's branding and its boards on other websites, as a studio sets them in admin and as
another site's browser meets them: the logo's page, the iframe's headers, CORS on the game's
reads, and the websocket's origin rule (the widget itself runs in Chromium:
test_widget_browser.py)."""

from __future__ import annotations

import base64

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from core import branding
from core.config import GameConfig
from core.models import AuditEntry, Game
from games import services
from tests.moderation.test_admin import game_form

pytestmark = pytest.mark.django_db(transaction=True)

STUDIO = "https://studio.example"
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def submit(game: Game, *scores: tuple[str, int]) -> None:
    config = GameConfig.from_model(Game.objects.prefetch_related("leaderboards").get(pk=game.pk), "0")

    async def each() -> None:
        for player_id, score in scores:
            await services.score_submit(game=config, board=config.boards[0], player_id=player_id, score=score)

    async_to_sync(each)()


def branded(game: Game, **fields: object) -> Game:
    for name, value in fields.items():
        setattr(game, name, value)
    game.save()  # announces the change: every process reloads the game's config
    return game


# ----------------------------------------------------------------- the values a studio sets


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("https://Studio.Example", "https://studio.example"),
        ("https://studio.example/", "https://studio.example"),
        ("https://studio.example:443", "https://studio.example"),
        ("http://localhost:3000", "http://localhost:3000"),
        ("https://bücher.example", "https://xn--bcher-kva.example"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_it_writes_an_origin_as_browsers_send_it(written, normal):
    assert branding.origin_normal(written) == normal


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("studio.example", "not an origin"),
        ("ftp://studio.example", "not an origin"),
        ("https://studio.example/page", "more than an origin"),
        ("https://user@studio.example", "more than an origin"),
        ("https://*.studio.example", "wildcard"),
        ("https://studio.example:99999", "not an origin"),
    ],
)
def test_it_refuses_what_is_not_an_origin_saying_why(written, says):
    with pytest.raises(ValidationError, match=says):
        branding.origin_normal(written)


def test_it_keeps_a_short_list_of_origins_without_repeats():
    assert branding.origins_check([STUDIO, "https://STUDIO.example/", " "]) == [STUDIO]
    with pytest.raises(ValidationError, match="At most 20"):
        branding.origins_check([f"https://s{i}.example" for i in range(21)])


def test_it_takes_only_small_raster_logos():
    assert branding.logo_type(PNG) == "image/png"
    with pytest.raises(ValidationError, match="PNG, JPEG, GIF or WebP"):
        branding.logo_type(b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>")
    with pytest.raises(ValidationError, match="at most 100 KB"):
        branding.logo_type(PNG + b"\0" * branding.LOGO_MAX_BYTES)


# ----------------------------------------------------------------- admin, the logo, the API


def test_it_sets_the_branding_in_admin_and_shows_it_everywhere(admin_client, make_game):
    game = make_game("tetris")
    url = reverse("admin:core_game_change", args=[game.pk])
    logo = SimpleUploadedFile("logo.png", PNG, content_type="image/png")
    form = game_form(
        game,
        short_name="Tet",
        accent="#0a7d33",
        embed_origins=f"{STUDIO}\nhttp://localhost:3000/",
        logo_upload=logo,
    )
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]

    saved = Game.objects.get(pk=game.pk)
    assert (saved.short_name, saved.accent, saved.embed_origins) == (
        "Tet",
        "#0a7d33",
        [STUDIO, "http://localhost:3000"],
    )
    public = Client().get("/api/v1/games/tetris").json()
    assert (public["short_name"], public["accent"]) == ("Tet", "#0a7d33")
    assert public["socket"] == {"path": "/ws/games/tetris/", "port": None}
    served = Client().get(public["logo_url"])
    assert served.status_code == 200 and served.content == PNG
    assert served["Content-Type"] == "image/png" and "immutable" in served["Cache-Control"]
    assert served["X-Content-Type-Options"] == "nosniff"
    page = Client().get("/games/tetris/").content.decode()
    assert public["logo_url"].replace("&", "&amp;") in page and "--game-accent: #0a7d33" in page
    assert '<span class="name-full">Tetris</span><span class="name-short">Tet</span>' in page  # on phones

    [entry] = AuditEntry.objects.filter(action=AuditEntry.Action.CHANGE_GAME)
    assert entry.detail == {"changed": ["accent", "embed_origins", "logo_version", "short_name"]}

    removed = admin_client.post(url, game_form(saved, short_name="Tet", accent="#0a7d33", logo_remove="on"))
    assert removed.status_code == 302
    assert Client().get("/api/v1/games/tetris").json()["logo_url"] is None
    assert Client().get("/games/tetris/logo").status_code == 404


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("embed_origins", "https://studio.example/page", "more than an origin"),
        ("accent", "teal", "six hex digits"),
        ("logo_upload", SimpleUploadedFile("logo.svg", b"<svg/>"), "PNG, JPEG, GIF or WebP"),
    ],
)
def test_it_refuses_bad_branding_in_admin_saying_why(admin_client, make_game, field, value, says):
    game = make_game("tetris")
    response = admin_client.post(reverse("admin:core_game_change", args=[game.pk]), game_form(game, **{field: value}))
    assert response.status_code == 200 and says in response.content.decode()
    saved = Game.objects.get(pk=game.pk)
    assert (saved.accent, saved.embed_origins, saved.logo_version) == ("", [], "")


def test_it_answers_an_unbranded_game_with_nulls(client, make_game):
    make_game("tetris")
    game = client.get("/api/v1/games/tetris").json()
    assert (game["short_name"], game["accent"], game["logo_url"]) == ("Tetris", None, None)


# ----------------------------------------------------------------- the iframe


def test_it_lets_only_the_games_origins_frame_its_board(client, make_game):
    game = branded(make_game("tetris"), embed_origins=[STUDIO])
    submit(game, ("ann", 300), ("bob", 200))
    response = client.get("/embed/games/tetris/main/?period=all-time&limit=2&theme=dark&accent=%23ff0066")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == f"frame-ancestors 'self' {STUDIO}"
    assert "X-Frame-Options" not in response
    html = response.content.decode()
    assert 'limit="2"' in html and 'theme="dark"' in html and 'accent="#ff0066"' in html
    assert html.index("ann") < html.index("bob")  # the rows, for a browser that runs no script

    # Other pages keep refusing frames.
    assert client.get("/games/tetris/")["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/embed/games/nope/main/", 404, "no game “nope”"),
        ("/embed/games/tetris/nope/", 404, "no board “nope”"),
        ("/embed/games/tetris/main/?period=hourly", 404, "keeps no “hourly” window"),
        ("/embed/games/tetris/main/?limit=500", 400, "limit is 1 to 50"),
        ("/embed/games/tetris/main/?limit=" + "9" * 5000, 400, "limit is 1 to 50"),
        ("/embed/games/tetris/main/?limit=%D9%A3", 400, "limit is 1 to 50"),
        ("/embed/games/tetris/main/?theme=neon", 400, "theme is auto, light or dark"),
        ("/embed/games/tetris/main/?accent=red", 400, "accent is # and six hex digits"),
    ],
)
def test_it_explains_a_bad_iframe_address_inside_the_frame(client, make_game, path, status, says):
    branded(make_game("tetris", periods_kept=["all-time"]), embed_origins=[STUDIO])
    response = client.get(path)
    assert response.status_code == status and says in response.content.decode()
    assert response["Content-Security-Policy"].startswith("frame-ancestors 'self'")


# ----------------------------------------------------------------- CORS on the game's reads


def test_it_answers_the_games_origins_on_its_reads_and_no_others(client, make_game):
    branded(make_game("tetris"), embed_origins=[STUDIO])
    branded(make_game("other"), embed_origins=["https://other.example"])
    read = "/api/v1/games/tetris/leaderboards/main/daily"

    assert client.get(read, HTTP_ORIGIN=STUDIO)["Access-Control-Allow-Origin"] == STUDIO
    assert "Access-Control-Allow-Origin" not in client.get(read, HTTP_ORIGIN="https://other.example")
    assert "Access-Control-Allow-Origin" not in client.get(read, HTTP_ORIGIN="https://evil.example")
    assert "Access-Control-Allow-Origin" not in client.get("/api/v1/games/other", HTTP_ORIGIN=STUDIO)
    # Writes stay out of reach of every web page.
    preflight = client.options(
        "/api/v1/games/tetris/leaderboards/main/scores",
        HTTP_ORIGIN=STUDIO,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
    )
    assert "POST" not in preflight.get("Access-Control-Allow-Methods", "")
