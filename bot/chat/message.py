"""Platform-neutral values the chat flow works on: a message that may be a question, a vote."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.chat.access import Asker, Visibility
from bot.chat.files import Attached
from rag.types import Mode, Platform, Turn


class Kind(enum.StrEnum):
    MENTION = "mention"  # @Sift in a channel or group chat
    DIRECT = "direct"  # a DM, a personal chat, an assistant-panel thread
    THREAD_REPLY = "thread_reply"  # a reply without a mention in a channel thread
    CHANNEL = "channel"  # a top-level channel message without a mention (auto-answer)
    COMMAND = "command"  # the /sift slash command: a private answer


# How a vote arrived (storage's feedback channel).
VIA_REACTION, VIA_BUTTON = "reaction", "button"


@dataclass(frozen=True)
class ChatMessage:
    """A message for Sift, or one that may be; adapters fill it from the platform's payload."""

    platform: Platform
    kind: Kind
    event_key: str  # dedupe key: a redelivery carries the same
    workspace: str  # Slack team id, Teams tenant id
    channel: str  # Slack channel id, Teams conversation id without the thread
    thread: str  # the thread the message sits in ("" at top level)
    user: str
    text: str  # the bot's own mention removed
    ts: str = ""  # the message's own id on the platform
    reply_thread: str = ""  # the thread the answer goes to (recorded with the interaction)
    conversation: str = ""  # key of the stored history for follow-ups ("" when none is kept)
    team: str = ""  # Teams: the team a channel belongs to (a policy may name the team)
    mentions_others: bool = False  # it @mentions people or broadcasts: not for Sift unless named
    email: str = ""  # when the surface knows it (the web chat behind an OIDC sign-in)
    mode: Mode | None = None  # the asker chose one (the API, MCP); None: the configured
    files: tuple[Attached, ...] = ()  # attached to this message by its sender

    @property
    def asker(self) -> Asker:
        return Asker(self.platform, self.user, self.workspace, self.email)

    @property
    def private(self) -> bool:
        """Only the asker reads the answer: a DM, a personal chat, a /sift answer."""
        return self.kind in (Kind.DIRECT, Kind.COMMAND)

    @property
    def visibility(self) -> Visibility:
        return Visibility.PRIVATE if self.private else Visibility.CHANNEL


@dataclass(frozen=True)
class Vote:
    """A 👍/👎 on one of Sift's answers (`added` False: a reaction taken back)."""

    platform: Platform
    channel: str
    message_ref: str  # the answer's message id (Slack ts, Teams activity id)
    user: str
    vote: int  # +1 or -1
    via: str  # VIA_REACTION or VIA_BUTTON
    added: bool = True
    event_key: str = ""  # reactions are deduplicated by their event id
    comment: str | None = None
    thread: str = ""
    team: str = ""  # Teams: the team of the channel (a policy may name the team)


@dataclass(frozen=True)
class Thread:
    """What the platform shows of the thread a message sits in."""

    answered_by_me: bool
    turns: tuple[Turn, ...] = ()
