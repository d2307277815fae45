"""docs/clients.md's Python examples of competitions (and an export) run as written, against the real server:
the boards they name made first (a weekly cup in cohorts that bob already plays, a running
season), "https://lb.example.com" read as the server's address, KEY and MANAGE_KEY given."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import re
from pathlib import Path

import httpx
import pytest

from tests.real_server import REPO_DIR, manage, node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

GAME = "tetris"  # the game the examples name
SECTION = "### Competitions: cohorts, settlements and ending a season"
EXAMPLE_URL = "https://lb.example.com"


def python_examples(section: str) -> list[str]:
    """The Python code blocks of one section of docs/clients.md, in order."""
    text = (REPO_DIR / "docs" / "clients.md").read_text()
    start = text.index(section)
    following = re.search(r"^#{2,3} ", text[start + len(section) :], flags=re.MULTILINE)
    body = text[start : start + len(section) + following.start()] if following else text[start:]
    return re.findall(r"^```python\n(.*?)^```", body, flags=re.MULTILINE | re.DOTALL)


def _boards(url: str, submit_key: str, manage_key: str) -> None:
    now = dt.datetime.now(dt.UTC)
    boards = f"{url}/api/v1/games/{GAME}/leaderboards"
    manage_auth, submit_auth = {"Authorization": f"Bearer {manage_key}"}, {"Authorization": f"Bearer {submit_key}"}
    cup = {
        "name": "Weekly cup",
        "mode": "best",
        "order": "desc",
        "windows": ["weekly"],
        "entry": "join",
        "cohort_size": 30,
        "rewards": [{"from_rank": 1, "reward": {"coins": 500}}],
    }
    spring = {
        "name": "Spring cup",
        "mode": "best",
        "order": "desc",
        "windows": ["all-time"],
        "starts_at": (now - dt.timedelta(days=1)).isoformat(),
        "ends_at": (now + dt.timedelta(days=30)).isoformat(),
        "entry": "join",
    }
    answers = [
        httpx.put(f"{boards}/weekly-cup", json=cup, headers=manage_auth),
        httpx.put(f"{boards}/spring-cup", json=spring, headers=manage_auth),
        httpx.post(f"{boards}/weekly-cup/entries", json={"player_id": "bob"}, headers=submit_auth),
        httpx.post(f"{boards}/weekly-cup/scores", json={"player_id": "bob", "score": 900}, headers=submit_auth),
    ]
    assert all(a.status_code in (200, 201) for a in answers), [a.text for a in answers]


def run_examples(tmp_path: Path, examples: list[str]) -> tuple[dict[str, object], list[str]]:
    """Runs ``examples`` in turn in one namespace (KEY and MANAGE_KEY given) against a real
    server whose boards they name; the namespace, and the lines they printed."""
    node = setup_node(node_env(tmp_path), GAME)
    manage_key = manage(node.env, "createapikey", GAME, "--name", "ops", "--scope", "manage").strip()
    printed = io.StringIO()
    scope: dict[str, object] = {"KEY": node.raw_key, "MANAGE_KEY": manage_key}
    try:
        url = start_web(node)
        _boards(url, node.raw_key, manage_key)
        # In a directory of their own: an example may write a file (an export).
        with contextlib.redirect_stdout(printed), contextlib.chdir(tmp_path):
            for example in examples:
                exec(compile(example.replace(EXAMPLE_URL, url), "docs/clients.md", "exec"), scope)
    finally:
        stop_all(node)
    return scope, printed.getvalue().splitlines()


def test_it_runs_the_competition_examples_of_the_clients_doc_as_written(tmp_path: Path) -> None:
    examples = python_examples(SECTION)
    assert len(examples) == 3, "the section's three Python examples"

    scope, lines = run_examples(tmp_path, examples)

    assert lines[:4] == ["cohort 1: 1 of 2", "{'ada': '1', 'bob': '1'}", "1 2", "1 {'coins': 500}"]
    assert scope["week"] is None and lines[4].endswith(" False")
    assert (tmp_path / "weekly.csv").read_text().splitlines()[0] == "rank,player_id,display_name,score,shown,metadata"


def test_it_runs_the_first_python_example_of_the_clients_doc_as_written(tmp_path: Path) -> None:
    """The Python section's opening example: a score, a batch (it once named an end_of_match it
    never defined), presence, reads, a link code and a join."""
    _, lines = run_examples(tmp_path, python_examples("## Python")[:1])

    assert lines == ["1", "None"]  # ada's daily rank; the cup has no attempts cap
