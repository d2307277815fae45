from __future__ import annotations

from django.apps import AppConfig


class EmbedConfig(AppConfig):
    """A game's boards on other websites: the web component's files, the iframe page and the
    game's logo (docs/embed.md)."""

    name = "embed"
