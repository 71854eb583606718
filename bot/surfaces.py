"""The chat surfaces `sift serve` runs, listed once: a new surface is a folder and one line.

Each spec (bot/surface_spec.py) brings its settings section, its channel and people ids,
its start-up line, and how it is built; `sift serve`, the settings, the start-up lines and
the channel policies follow from this list (the connector registry's counterpart)."""

from __future__ import annotations

from typing import Any

from bot.slack import spec as slack
from bot.surface_spec import SurfaceSpec
from bot.teams import spec as teams
from bot.webchat import spec as webchat

SPECS: tuple[SurfaceSpec[Any], ...] = (slack.SPEC, teams.SPEC, webchat.SPEC)


def with_policies() -> tuple[SurfaceSpec[Any], ...]:
    """The surfaces whose channels a channel policy may name."""
    return tuple(s for s in SPECS if s.channel_ids is not None)


def by_platform(platform: str) -> SurfaceSpec[Any] | None:
    return next((s for s in SPECS if s.platform == platform), None)
