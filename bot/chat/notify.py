"""Messages Sift starts itself (an owner's reminder, the weekly digest): the port a surface
fills to reach a person or a channel, and the switchboard that finds the surface for an id."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Choice:
    """A button under a notice: `action` with `value` comes back to the surface's handler;
    a choice with a `url` only opens that page."""

    label: str
    action: str = ""
    value: str = ""
    url: str = ""


@dataclass(frozen=True)
class Notice:
    """Markdown (Sift's own, as answers are written) and the buttons under it."""

    text: str
    choices: tuple[Choice, ...] = ()


class Notifier(Protocol):
    """One platform's way to start a conversation: `to` is a person's or a channel's id there
    (a Slack U… or C… id). Returns False when the platform refused (the log says why)."""

    async def notify(self, to: str, notice: Notice) -> bool: ...


def split_address(address: str) -> tuple[str, str]:
    """"teams:29:1ab…" → ("teams", "29:1ab…"); a bare id is Slack's (U…, C…), as owners and
    escalation people are written in sift.toml."""
    platform, sep, rest = address.partition(":")
    if sep and platform in ("slack", "teams") and rest:
        return platform, rest
    return "slack", address


class Switchboard:
    """The running surfaces that can start a conversation, registered as `sift serve` builds
    them; what starts messages (reminders, the digest) is made before the surfaces are."""

    def __init__(self) -> None:
        self._by_platform: dict[str, Notifier] = {}

    def add(self, platform: str, notifier: Notifier) -> None:
        self._by_platform[platform] = notifier

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(self._by_platform)

    async def send(self, address: str, notice: Notice) -> bool:
        """False, with a warning naming the address, when no running surface reaches it."""
        platform, to = split_address(address)
        notifier = self._by_platform.get(platform)
        if notifier is None:
            log.warning("cannot message %s: no running %s surface can start a conversation",
                        address, platform)
            return False
        return await notifier.notify(to, notice)
