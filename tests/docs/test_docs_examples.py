"""The shell examples of the README and the docs, run as written against a real server (issue 24).

Each run starts a fresh node (its own SQLite database in the test's directory, the suite's Redis;
tests/real_server.py) and runs a page's ```sh blocks in document order in ONE bash session, so
that what a block sets (``B``, ``KEY``, ``GRANT``...) is there for the next, as it is for a
reader who follows the page from the top. The only change made to the examples is their address:
``http://127.0.0.1:8000``, where ``make run`` serves, is replaced by the node's URL. The session
has the node's environment (so ``.venv/bin/python manage.py`` reaches the node's database) but
not ``DEBUG``: a reader's own shell has it only once the page exports it.

The session runs in a directory that mirrors the repository's top level (a symlink per entry), so
that ``.venv/bin/python manage.py`` and every relative path work as at the repository root, while
the files an example writes (``endpoint.json``, an export's CSV) land in the test's directory,
not in the checkout, where a second run's ``curl -OJ`` would refuse to overwrite them.

It stops at the first failing command (``set -euo pipefail``), and every ``curl`` must be answered
2xx or 3xx: ``curl`` is a bash function that calls the real one with ``-w`` appending the status to
a log, read block by block. No example is meant to show an error today (one that is would need
an allowance here, by name).

Blocks that are not run (installation, interactive or long-running commands, synopses with
placeholders) are listed below with the reason, and a test checks that every ```sh and ```python
block of the README and docs/ is run by one of these tests, run by tests/clients/test_docs_examples.py
(the clients doc's Python programs), or listed here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clients.test_docs_examples import SECTION as CLIENTS_COMPETITION_SECTION
from tests.clients.test_docs_examples import python_examples
from tests.real_server import REPO_DIR, Node, manage, node_env, start_web, stop_all

pytestmark = pytest.mark.wall_clock

DOCS_ADDRESS = "http://127.0.0.1:8000"  # make run's, as the examples name it
GAME = "tetris"  # the game the examples make
RUN_TIMEOUT_SECS = 90.0
README = "README.md"
API_DOC = "docs/api.md"
WEBHOOKS_DOC = "docs/webhooks.md"
# Pages whose examples start where the README's quick start leaves off (the game `tetris`, its
# board `main`, `KEY`, DEBUG exported), as each says: run after the README's blocks.
AFTER_QUICK_START = ["docs/competitions.md", "docs/moderation.md", WEBHOOKS_DOC]

# (doc, first line of the block) -> why the block is not run.
SKIPPED_SHELL: dict[tuple[str, str], str] = {
    (README, "DEBUG=1 .venv/bin/python manage.py createsuperuser"): "interactive: asks for a user name and password",
    (
        README,
        ".venv/bin/python manage.py archive_period demo daily 2026-11-21          # archive a finished period now",
    ): "operations commands with illustrative arguments: make run's demo game (seed_demo's history), days of "
    "the docs' week, a season board (spring-cup, which the demo does not have); `healthcheck worker` needs make "
    "run's worker",
    (
        "docs/architecture.md",
        ".venv/bin/python -m pytest tests/test_layers.py   # the check, on its own",
    ): "runs a test of the code's layers, not the server (the suite runs it)",
    (
        "docs/clients.md",
        "pip install ./clients/python          # from a checkout; needs Python 3.10+",
    ): "installation",
    (
        "docs/clients.md",
        "cd clients/typescript && npm ci && npm run build   # dist/src/index.js and its .d.ts",
    ): "installation and build (tests/clients/test_typescript_client.py builds the client)",
    ("docs/webhooks.md", "pip install ./clients/python"): "installation, then a receiver that serves until stopped "
    "(clients/python/tests/test_webhook_receivers.py runs it)",
    ("docs/webhooks.md", "cd clients/typescript && npm ci && npm run build"): "build, then a receiver that serves "
    "until stopped (clients/python/tests/test_webhook_receivers.py runs it)",
    (
        "docs/webhooks.md",
        "manage.py webhooks add GAME URL [--description D] [--event-type T ...] [--disabled]",
    ): "the command's synopsis, with placeholders",
    (
        "docs/websocket.md",
        ".venv/bin/python manage.py broadcast [--tick-ms N]   # N >= 10; default BROADCAST_TICK_MS (200)",
    ): "the synopsis of a process make run starts, which serves until stopped",
}

# (doc, first line of the block) -> why the Python block is not run. Whole programs are run
# by tests/clients/test_docs_examples.py.
SKIPPED_PYTHON: dict[tuple[str, str], str] = {
    (
        "docs/clients.md",
        'for reward in lb.rewards("ada", status="pending")["rewards"]:',
    ): "a fragment: `lb` is the open client of the example above it, `inventory` the studio's own store",
    (
        "docs/clients.md",
        "from leaderboard_client.webhooks import WebhookVerificationError, verify",
    ): "a fragment of a receiver: `raw_body` and `headers` are a request's "
    "(clients/python/tests/test_webhook_receivers.py runs a whole one)",
    (
        "docs/webhooks.md",
        "from leaderboard_client.webhooks import WebhookVerificationError, verify",
    ): "the heart of clients/python/examples/webhook_receiver.py, shown alone "
    "(clients/python/tests/test_webhook_receivers.py runs the whole receiver)",
    ("docs/events.md", "import logging"): "a handler and its AppConfig: code inside a Django app of the product",
}

BLOCK_MARK = re.compile(r"^@@block (\d+)$", flags=re.MULTILINE)
STATUS = re.compile(r"^@@status (\d{3}) (.*)$")
# The session's preamble: stop at the first failure; `curl` appends each answer's status (and
# any error curl printed) to the log, after the mark of the block it ran in.
PREAMBLE = """set -euo pipefail
curl() { command curl -w '%{stderr}@@status %{http_code} %{method} %{url_effective}\\n' "$@" 2>>"$DOCS_CURL_LOG"; }
"""


@dataclass(frozen=True)
class Block:
    doc: str  # its path in the repository
    line: int  # of its opening fence
    code: str

    @property
    def head(self) -> str:
        return self.code.split("\n", 1)[0]

    @property
    def key(self) -> tuple[str, str]:
        return (self.doc, self.head)

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass(frozen=True)
class BlockRun:
    block: Block
    statuses: list[tuple[int, str]]  # (HTTP status, "METHOD url") of each curl, in order
    curl_errors: list[str]
    out: str
    err: str

    def report(self) -> str:
        answers = "\n".join(f"  {status} {request}" for status, request in self.statuses)
        return (
            f"{self.block}:\n{self.block.code}--- answers:\n{answers}\n--- curl's errors:\n"
            + "\n".join(self.curl_errors)
            + f"\n--- stdout:\n{self.out[-3000:]}\n--- stderr:\n{self.err[-3000:]}"
        )


def code_blocks(doc: str, lang: str) -> list[Block]:
    text = (REPO_DIR / doc).read_text()
    return [
        Block(doc, text.count("\n", 0, match.start()) + 1, match.group(1))
        for match in re.finditer(rf"^```{lang}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    ]


def run_blocks(doc: str) -> list[Block]:
    """The doc's shell blocks that are run, in order."""
    return [block for block in code_blocks(doc, "sh") if block.key not in SKIPPED_SHELL]


def all_docs() -> list[str]:
    return [README, *sorted(str(path.relative_to(REPO_DIR)) for path in (REPO_DIR / "docs").glob("*.md"))]


def repo_mirror(tmp_path: Path) -> Path:
    """A directory with a symlink to each top-level entry of the repository."""
    mirror = tmp_path / "repo"
    mirror.mkdir()
    for entry in REPO_DIR.iterdir():
        (mirror / entry.name).symlink_to(entry)
    return mirror


def _split(text: str, count: int) -> list[str]:
    """``text`` cut at the block marks: what each of ``count`` blocks wrote."""
    parts = [""] * count
    pieces = BLOCK_MARK.split(text)
    for index, piece in zip(pieces[1::2], pieces[2::2], strict=True):
        parts[int(index)] += piece
    return parts


def start_worker(node: Node, log: Path) -> None:
    """A Celery worker of the node, as make run starts one (events, webhook deliveries)."""
    args = [sys.executable, "-m", "celery", "-A", "leaderboard_site", "--quiet", "worker", "--loglevel", "WARNING"]
    with log.open("ab") as out:
        process = subprocess.Popen([*args, "--concurrency", "1"], env=node.env, cwd=REPO_DIR, stdout=out, stderr=out)
    node.processes.append(process)


def session(tmp_path: Path, blocks: list[Block], *, worker: bool = False) -> list[BlockRun]:
    """Runs ``blocks`` in one bash session against a fresh node (with a Celery worker if asked);
    each block's run. Fails the test on the first command that fails, naming its block."""
    env = node_env(tmp_path)
    manage(env, "migrate", "--noinput", "-v", "0")
    node = Node(env=env, raw_key="", game=GAME)
    log = tmp_path / "curl.log"
    log.touch()
    script = [PREAMBLE]
    try:
        if worker:
            start_worker(node, tmp_path / "worker.log")
        url = start_web(node)
        for index, block in enumerate(blocks):
            mark = f"printf '\\n@@block {index}\\n'"
            script += [f'{mark}; {mark} >&2; {mark} >>"$DOCS_CURL_LOG"', block.code.replace(DOCS_ADDRESS, url)]
        path = tmp_path / "examples.sh"
        path.write_text("\n".join(script))
        shell_env = {name: value for name, value in env.items() if name not in ("DEBUG", "SECRET_KEY", "BASH_ENV")}
        shell_env["DOCS_CURL_LOG"] = str(log)
        done = subprocess.run(
            ["bash", str(path)],
            cwd=repo_mirror(tmp_path),
            env=shell_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECS,
        )
    finally:
        stop_all(node)
    outs, errs, logs = (_split(text, len(blocks)) for text in (done.stdout, done.stderr, log.read_text()))
    runs = []
    for block, out, err, lines in zip(blocks, outs, errs, logs, strict=True):
        statuses, curl_errors = [], []
        for line in filter(None, lines.splitlines()):
            status = STATUS.match(line)
            if status:
                statuses.append((int(status.group(1)), status.group(2)))
            else:
                curl_errors.append(line)
        runs.append(BlockRun(block, statuses, curl_errors, out, err))
    if done.returncode != 0:
        started = [int(index) for index in BLOCK_MARK.findall(done.stdout)]
        failed = runs[started[-1]] if started else None
        pytest.fail(f"bash exited {done.returncode} in " + (failed.report() if failed else done.stderr[-3000:]))
    return runs


def assert_answered(runs: list[BlockRun]) -> None:
    """Every curl of every block was answered 2xx or 3xx (and a block that calls curl called the
    function that logs it)."""
    refused = [run for run in runs if run.curl_errors or any(not 200 <= s < 400 for s, _ in run.statuses)]
    unlogged = [str(run.block) for run in runs if "curl " in run.block.code and not run.statuses]
    assert not refused, "examples refused:\n\n" + "\n\n".join(run.report() for run in refused)
    assert not unlogged, "blocks whose curl answered nothing the log saw"


def test_it_runs_every_shell_example_of_the_api_doc_in_order(tmp_path: Path) -> None:
    """docs/api.md from its setup block (the game, its board `main`, KEY and MANAGE_KEY) to its
    last example: scores, boards, a season cup ended and settled, a weekly cup with cohorts, a
    league, a reward claimed, presence, every read, an export, webhooks and health."""
    blocks = run_blocks(API_DOC)
    assert len(blocks) >= 30, "api.md's shell examples"

    runs = session(tmp_path, blocks)

    assert_answered(runs)
    assert (tmp_path / "repo" / f"tetris-main-daily-{daily_id(runs)}.csv").exists(), "the export's -OJ file"


def daily_id(runs: list[BlockRun]) -> str:
    """The daily period id of the first score the examples posted."""
    found = re.search(r'"daily":\s*\{"period_id":\s*"([0-9-]+)"', "".join(run.out for run in runs))
    assert found, "a score's answer"
    return found.group(1)


@pytest.mark.parametrize("doc", [doc for doc in AFTER_QUICK_START if doc != WEBHOOKS_DOC])
def test_it_runs_the_shell_examples_of_a_doc_after_the_readmes_quick_start(tmp_path: Path, doc: str) -> None:
    """The README's quick start (the game, its board, keys, scores), then the page's examples,
    as the page asks of its reader."""
    quick_start, own = run_blocks(README), run_blocks(doc)
    assert quick_start and own

    runs = session(tmp_path, [*quick_start, *own])

    assert_answered(runs)


def test_it_runs_the_webhooks_quick_start_after_the_readmes_with_a_worker(tmp_path: Path) -> None:
    """docs/webhooks.md's quick start, after the README's, with a Celery worker beside the server
    as make run has: the test event it asks for is delivered (to a host that does not answer) and
    its delivery listed within the example's `sleep 5`."""
    quick_start, own = run_blocks(README), run_blocks(WEBHOOKS_DOC)
    assert [block.head for block in own][-1].startswith("ENDPOINT_ID=")

    runs = session(tmp_path, [*quick_start, *own], worker=True)

    assert_answered(runs)
    assert (tmp_path / "repo" / "endpoint.json").exists()
    out = runs[-1].out  # the test event's answer, then the deliveries
    deliveries = json.loads(out[out.rindex('{"total"') :])
    assert [d["event_type"] for d in deliveries["deliveries"]] == ["webhook.test"], deliveries


def test_it_runs_or_lists_every_shell_and_python_example_of_the_readme_and_docs() -> None:
    """Every ```sh block is run above or skipped with its reason; every ```python block is run by
    tests/clients/test_docs_examples.py or skipped with its reason; nothing listed is stale."""
    run_docs = {README, API_DOC, *AFTER_QUICK_START}
    shell = [block for doc in all_docs() for block in code_blocks(doc, "sh")]
    python = [block for doc in all_docs() for block in code_blocks(doc, "python")]
    clients_run = [*python_examples(CLIENTS_COMPETITION_SECTION), *python_examples("## Python")[:1]]

    unaccounted_shell = [str(b) for b in shell if b.doc not in run_docs and b.key not in SKIPPED_SHELL]
    unaccounted_python = [str(b) for b in python if b.code not in clients_run and b.key not in SKIPPED_PYTHON]
    stale = (set(SKIPPED_SHELL) - {b.key for b in shell}) | (set(SKIPPED_PYTHON) - {b.key for b in python})

    assert not unaccounted_shell, "shell examples neither run nor listed in SKIPPED_SHELL"
    assert not unaccounted_python, "Python examples neither run nor listed in SKIPPED_PYTHON"
    assert not stale, "listed as skipped, but no such block"
    assert len(clients_run) == 4 and all(b in [p.code for p in python] for b in clients_run)
