"""What the capture flow reads from Teams: a channel thread through Graph, with the app that
reads Teams' threads (the bot's own, else a Teams source's)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

from bot.chat.capture import PRIVATE_KIND, PUBLIC_KIND, Place, Post
from bot.chat.message import Thread, Vote
from bot.chat.surface import Delivery
from rag import messages
from rag.errors import PlatformRefused
from rag.ports import TextSink
from rag.types import Answer
from sync.connectors.common.convert import DocumentParseError, as_datetime
from sync.connectors.teams import TeamsConnector
from sync.connectors.teams_api import Channel, ChannelUnreadable, Message, Team
from sync.connectors.teams_text import to_markdown
from sync.connectors.teams_thread import access_of

log = logging.getLogger(__name__)


def _at(value: str) -> datetime:
    try:
        return as_datetime(value) or datetime.fromtimestamp(0, UTC)
    except DocumentParseError:
        return datetime.fromtimestamp(0, UTC)


class TeamsThreadReader:
    """The chat core's ThreadReader for one channel thread: `team` is the team's group id
    (what Graph names it by), `root` the thread's first message. One Graph session reads the
    channel and the whole thread; the place, links and names come from that read."""

    def __init__(self, connector: TeamsConnector, team: str, root: str) -> None:
        self._connector = connector
        self._team = Team(team, team)
        self._root = root
        self._channel: Channel | None = None
        self._messages: dict[str, Message] = {}

    async def posts(self, channel: str, message_ref: str) -> tuple[Post, ...]:
        try:
            async with self._connector.graph() as api:
                found = await api.channel(self._team, channel)
                root = await api.message(found, self._root)
                replies = await api.replies(found, self._root) if root is not None else []
        except ChannelUnreadable as exc:  # no permission there, or gone: the person hears it
            raise PlatformRefused(f"reading Teams thread {self._root}: {exc.user_message}",
                                  user_message=messages.TEAMS_THREAD_UNREADABLE) from exc
        self._channel = found
        if root is None:
            return ()
        thread = [m for m in (root, *replies) if not m.deleted and m.kind == "message"]
        self._messages = {m.id: m for m in thread}
        return tuple(Post(m.id, m.user_id, to_markdown(m), _at(m.created),
                          by_bot=bool(m.app_id)) for m in thread)

    async def place(self, channel: str) -> Place:
        """A standard channel is read by its team, a private or shared one by its members:
        the same readers a Teams source gives the thread."""
        found = self._channel or Channel(self._team, channel, channel, "private")
        kind = PUBLIC_KIND if found.standard else PRIVATE_KIND
        return Place(f"#{found.name}", kind, readers=access_of(found))

    async def link(self, channel: str, message_ref: str) -> str:
        found = self._messages.get(message_ref) or self._messages.get(self._root)
        return found.url if found is not None else ""

    async def person(self, user: str) -> str:
        return next((m.author for m in self._messages.values() if m.user_id == user), "")


class DialogNotes:
    """The Surface of a message action: what the capture says becomes the dialog's one
    sentence; once the dialog has closed (`close`), anything said later is only logged."""

    def __init__(self) -> None:
        self._said: list[str] = []
        self._closed = False

    def close(self, fallback: str) -> str:
        self._closed = True
        return self._said[-1] if self._said else fallback

    def _say(self, text: str) -> None:
        if self._closed:
            log.info("after the dialog closed, the capture said: %s", text)
        self._said.append(text)

    async def thread(self) -> Thread | None:
        return None

    @contextlib.asynccontextmanager
    async def working(self, delivery: Delivery) -> AsyncIterator[TextSink | None]:
        yield None

    async def deliver(self, answer: Answer, delivery: Delivery) -> str:
        raise RuntimeError("a message action's dialog shows no answers")

    async def notice(self, text: str) -> None:
        self._say(text)

    async def failure(self, correlation_id: str, message: str = messages.INTERNAL_ERROR
                      ) -> None:
        self._say(messages.with_reference(message, correlation_id))

    async def escalate(self, people: Sequence[str]) -> None:
        return None

    async def voted(self, vote: Vote, interaction_id: int) -> str | None:
        return None
