"""The settings mypy's Django plugin loads (pyproject.toml, [tool.django-stubs]): the
development ones whatever the shell says, so that a bare ``mypy`` checks types instead of
stopping at the production settings' SECRET_KEY check. Never used to serve."""

from __future__ import annotations

import os

os.environ["DEBUG"] = "1"

from .settings import *  # noqa: F403
