"""axe-core in the browser tests: injected into a page, it reports the page's accessibility
violations; the tests allow none that axe calls serious or critical.

axe-core comes from npm (tests/a11y/package.json, pinned by its lock file); the first test that
needs it installs it with `npm ci`, under a file lock, since parallel test workers may ask at once.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

HERE = Path(__file__).resolve().parent
AXE_JS = HERE / "node_modules" / "axe-core" / "axe.min.js"
NPM_TIMEOUT_SECS = 300
# What the tests refuse; "moderate" and "minor" findings are reported by axe but not failed on.
REFUSED_IMPACTS = ("serious", "critical")
# The rules of WCAG 2.1 A and AA (axe's tags), the level the pages are held to.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


@cache
def axe_source() -> str:
    with open(HERE / ".npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not AXE_JS.exists():
            npm = shutil.which("npm")
            if npm is None:
                pytest.fail("npm is not installed: the accessibility checks need axe-core from npm")
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=HERE,
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_SECS,
            )
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return AXE_JS.read_text()


def serious_violations(page: Page) -> list[dict[str, Any]]:
    """The page's serious and critical violations, each with its rule, impact and where."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_source())
    found = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})"
        ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))})))",
        WCAG_TAGS,
    )
    return [v for v in found if v["impact"] in REFUSED_IMPACTS]
