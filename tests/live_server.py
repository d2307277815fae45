"""Fixtures for tests that drive the real ASGI app over HTTP, and a headless Chromium.

Import them into a test module: ``from tests.live_server import asgi_live_server, browser``.

``asgi_live_server`` runs ``leaderboard_site.asgi:application`` in uvicorn in a
background thread, with its own event loop (and so its own Redis client). The
server thread reaches the test database through its own connections, so tests
using it need ``pytest.mark.django_db(transaction=True)``: data must be committed
for the server to see it. It serves the live websockets too (/ws/games/{slug}/).

``live_broadcaster`` runs the broadcaster (games/broadcaster.py) in another
background thread with its own event loop, so that scores posted during a test
reach the open websockets through the real Redis pub/sub channel layer.

``browser`` is Playwright's sync API. While Playwright lives, it leaves its event
loop marked as running in the main thread between calls. Two consequences:

* the fixture is module-scoped, not session-scoped: an async test that ran while a
  browser was alive would fail ("Cannot run the event loop while another loop is
  running"), so the browser must be gone before the next module's tests;
* while it lives, DJANGO_ALLOW_ASYNC_UNSAFE is set, because Django's guard would
  otherwise refuse every ORM call of the (sync) test and of pytest-django's
  teardown. The loop is not actually executing then, so those calls are safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
import uvicorn

from core.redis import close_redis

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Page, ViewportSize

SERVER_START_TIMEOUT_SECS = 10.0
SERVER_STOP_TIMEOUT_SECS = 10.0
# uvicorn waits this long for open connections (a browser's keep-alive) when stopping.
SERVER_GRACEFUL_SHUTDOWN_SECS = 2
# The broadcaster's tick in browser tests: short, so that a posted score shows within a test's wait.
BROADCAST_TICK_MS = 100
BROADCASTER_START_TIMEOUT_SECS = 5.0
BROADCASTER_STOP_TIMEOUT_SECS = 10.0
# How long a browser test waits for a live change to show (the test broadcaster ticks every
# BROADCAST_TICK_MS). It asserts arrival, not speed (bench/fanout.py measures latency): CI's
# parallel runs, two pytest workers beside Chromium, have starved a 2 s wait.
LIVE_WITHIN_MS = 10_000
DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
    async def main() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            # The app created a Redis client for this loop; close it before the loop goes.
            await close_redis()

    asyncio.run(main())


def _with_static_files(application: Any) -> Any:
    """HTTP through Django's static files handler; websockets straight to the app."""
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    static = ASGIStaticFilesHandler(application)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await application(scope, receive, send)
        elif scope["path"].startswith("/static/"):
            await static(scope, receive, _any_origin(send))
        else:
            await static(scope, receive, send)

    return app


def _any_origin(send: Any) -> Any:
    """Static files readable from any origin, as whitenoise serves them (its default) in
    production and in `make run`: another site's page loads the widget's modules."""

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"access-control-allow-origin", b"*")]}
        await send(message)

    return sending


@pytest.fixture
def asgi_live_server() -> Iterator[str]:
    """The base URL (no trailing slash) of the real ASGI app served on 127.0.0.1."""
    from leaderboard_site.asgi import application

    # Binding here, rather than picking a free port for uvicorn to bind, leaves no race.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # pytest-django turns DEBUG off, so WhiteNoise would look in an empty STATIC_ROOT:
    # serve static files from the finders, as Django's own live server does.
    config = uvicorn.Config(
        _with_static_files(application),
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=SERVER_GRACEFUL_SHUTDOWN_SECS,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=_serve, args=(server, sock), name="asgi-live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + SERVER_START_TIMEOUT_SECS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            pytest.fail("The live ASGI server did not start.")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(SERVER_STOP_TIMEOUT_SECS)
        sock.close()


@pytest.fixture
def live_broadcaster() -> Iterator[None]:
    """The broadcaster running for the test, ticking every BROADCAST_TICK_MS."""
    from live import broadcaster

    started = threading.Event()
    handles: dict[str, Any] = {}

    def serve() -> None:
        async def main() -> None:
            stop = asyncio.Event()
            handles["loop"], handles["stop"] = asyncio.get_running_loop(), stop
            started.set()
            try:
                await broadcaster.run(tick_ms=BROADCAST_TICK_MS, stop=stop)
            finally:
                # This loop's Redis client; the channel layer closes its own with the loop.
                await close_redis()

        asyncio.run(main())

    thread = threading.Thread(target=serve, name="live-broadcaster", daemon=True)
    thread.start()
    if not started.wait(BROADCASTER_START_TIMEOUT_SECS):
        pytest.fail("The broadcaster did not start.")
    try:
        yield
    finally:
        handles["loop"].call_soon_threadsafe(handles["stop"].set)
        thread.join(BROADCASTER_STOP_TIMEOUT_SECS)
        assert not thread.is_alive(), "The broadcaster did not stop."


@contextlib.contextmanager
def chromium(*extra_args: str) -> Iterator[Browser]:
    """A headless Chromium from the system (CHROMIUM, default /usr/bin/chromium); never downloads one."""
    executable = os.environ.get("CHROMIUM", DEFAULT_CHROMIUM)
    if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
        message = f"No Chromium at {executable}; install one or set CHROMIUM to its path."
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)

    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        launched = playwright.chromium.launch(executable_path=executable, args=[*CHROMIUM_ARGS, *extra_args])
        try:
            yield launched
        finally:
            launched.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


DESKTOP_VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
# Playwright waits this long for an element or an action before failing the test.
ACTION_TIMEOUT_MS = 10_000


class DialogWatch:
    """Records any alert/confirm/prompt: a script injected through data would raise one."""

    def __init__(self) -> None:
        self.fired: list[str] = []

    def __call__(self, dialog: Dialog) -> None:
        self.fired.append(dialog.message)
        dialog.dismiss()


@pytest.fixture
def dialogs() -> DialogWatch:
    return DialogWatch()


@pytest.fixture
def page(browser: Browser, dialogs: DialogWatch) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP_VIEWPORT)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    page = context.new_page()
    page.on("dialog", dialogs)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    strays: list[str] = []
    page.on("websocket", lambda socket: _check_frames(socket, strays))
    yield page
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
    assert strays == [], f"websocket messages that do not match live/events.py: {strays}"


def _check_frames(socket: Any, strays: list[str]) -> None:
    """Check every message the page receives on a live socket against its declaration."""
    from tests.live.event_schema import check_event

    def received(payload: str | bytes) -> None:
        try:
            check_event(json.loads(payload))
        except (AssertionError, ValueError) as error:
            strays.append(str(error))

    socket.on("framereceived", received)
