"""The product's settings plus the benchmark's reference view (bench/urls_bench.py).

The server under test is the real one; only ROOT_URLCONF differs, so nothing in
leaderboard_site/ needs a benchmark-only switch.
"""

from __future__ import annotations

from leaderboard_site.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls_bench"
