"""The chat surfaces `sift serve` runs, listed once: a new surface is a folder and one line.

Each spec (bot/surface_spec.py) brings its settings section, its channel and people ids,
its start-up line, and how it is built; `sift serve`, the settings, the start-up lines and
the channel policies follow from this list (the connector registry's counterpart)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.api import spec as api
from bot.chat.policy import Known, PolicyIds
from bot.mcp import spec as mcp
from bot.slack import spec as slack
from bot.surface_spec import SurfaceSpec
from bot.teams import spec as teams
from bot.webchat import spec as webchat

if TYPE_CHECKING:
    from bot.settings import Settings

SPECS: tuple[SurfaceSpec[Any], ...] = (slack.SPEC, teams.SPEC, webchat.SPEC, api.SPEC,
                                       mcp.SPEC)


def policy_platforms() -> dict[str, PolicyIds]:
    """The platforms whose channels a channel policy may name, with the ids each takes."""
    return {s.platform: s.policy_ids for s in SPECS if s.policy_ids is not None}


def policy_names(settings: Settings) -> Known:
    """What a channel policy may name: the platforms, the sources and the access groups."""
    from bot.answers.documents import SOURCE as ANSWERS  # the built-in source of answers

    return Known(sources=[*(s.name for s in settings.resolved_sources), ANSWERS],
                 groups=[g.name for g in settings.groups], platforms=policy_platforms())


def follow_ups(settings: Settings) -> dict[str, bool]:
    """Per platform, whether its conversations take follow-ups without a mention by default
    (a surface's own setting, such as [slack] follow_ups_without_mention)."""
    return {s.platform: s.follow_ups(s.config(settings)) for s in SPECS
            if s.follow_ups is not None}


def by_platform(platform: str) -> SurfaceSpec[Any] | None:
    return next((s for s in SPECS if s.platform == platform), None)
