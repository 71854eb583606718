"""Who asks and who will see the answer: the inputs of the permission rule, and its port."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from rag.types import Platform

PUBLIC = "public"


@dataclass(frozen=True)
class Asker:
    """The person behind a question, as the platform names them."""

    platform: Platform
    user: str  # Slack user id, Teams AAD object id, terminal login
    workspace: str = ""  # Slack team id, Teams tenant id
    email: str = ""  # when the platform hands it over (Teams UPN, `sift ask --as`)


class Visibility(enum.StrEnum):
    CHANNEL = "channel"  # everyone in the conversation sees the answer
    PRIVATE = "private"  # only the asker: a DM, a personal chat, an ephemeral /sift answer


@dataclass(frozen=True)
class Audience:
    """Who will read the answer; `groups` is the channel policy's declared audience."""

    visibility: Visibility
    groups: tuple[str, ...] = ()
    channel: str = ""  # where a CHANNEL answer shows (a private Slack channel reads its own)


class AccessResolver(Protocol):
    """The access groups a question may search with; a failed lookup must narrow, never widen."""

    async def groups_for(self, asker: Asker, audience: Audience) -> tuple[str, ...]: ...


class PublicOnly:
    """Every answer searches public documents only: the safe default without groups."""

    async def groups_for(self, asker: Asker, audience: Audience) -> tuple[str, ...]:
        return (PUBLIC,)


def visible_to(doc_access: Iterable[str], groups: Iterable[str]) -> bool:
    """True when a document with `doc_access` may be shown to readers holding `groups`."""
    return not set(doc_access).isdisjoint(groups)
