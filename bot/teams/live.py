"""Teams' streaming protocol: one answer shown while it is written, then completed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from aiohttp import ClientResponseError
from microsoft_agents.activity import Activity, ActivityTypes, ResourceResponse, StreamInfo
from microsoft_agents.hosting.core import TurnContext

from bot.teams.render import no_pings_so_far
from bot.teams.spec import STREAM_INTERVAL_S

log = logging.getLogger(__name__)


class AnswerStream:
    """Teams' streaming protocol for one answer: progress, the text as it is written, the end.

    An informative update opens the stream; its id names the message from then on. `show`
    hands over the whole answer so far, which goes out as cumulative streaming updates no
    closer together than `interval_s` (Teams throttles streams, about one update a second);
    text arriving in between replaces the text waiting, so the newest is what goes out.
    `open` sends the informative update beside the answer's work, not before it (a Bot
    Connector round trip the answer need not wait for); `finish` sends the final message,
    which replaces what was streamed. The SDK's
    StreamingResponse derives citation pop-ups itself (480-character excerpts, dropped without
    the AI label); this keeps the renderer's entities. A refused stream (4xx) degrades: no
    stream at all, or no more updates, or the answer as an ordinary message.
    """

    def __init__(self, turn: TurnContext, interval_s: float = STREAM_INTERVAL_S) -> None:
        self._turn = turn
        self._interval_s = interval_s
        self._stream_id = ""
        self._sequence = 1
        self._sent_at = 0.0
        self._latest = self._shown = ""
        self._updating = True  # until Teams refuses an update
        self._finishing = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._opening: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        return bool(self._stream_id)

    def open(self, text: str) -> None:
        """Start the stream with `text` as its progress line, in the background."""
        self._opening = asyncio.create_task(self._start(text))

    async def _start(self, text: str) -> None:
        update = Activity(type=ActivityTypes.typing, text=text, entities=[
            StreamInfo(stream_type="informative", stream_sequence=self._sequence)])
        try:
            sent = await self._send(update)
        except Exception as exc:  # no stream: the answer goes out whole when complete
            if isinstance(exc, ClientResponseError) and _refused(exc):
                log.warning("Teams refused to stream (%s %s); sending the answer whole",
                            exc.status, exc.message)
            else:
                log.exception("could not start streaming; sending the answer whole")
            return
        self._stream_id = sent.id if sent and sent.id else ""

    async def _opened(self) -> bool:
        """Whether the stream is open, once its first update has been answered."""
        if self._opening is not None:
            await self._opening
        return self.started

    async def show(self, text: str) -> None:
        """The answer so far (Markdown, whole); returns at once, the update follows."""
        refused = self._opening is not None and self._opening.done() and not self.started
        if self._opening is None or refused or not self._updating or self._finishing.is_set():
            return
        self._latest = no_pings_so_far(text)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_updates())

    async def _send_updates(self) -> None:
        if not await self._opened():
            return
        while self._updating and self._latest != self._shown:
            wait = self._sent_at + self._interval_s - time.monotonic()
            if wait > 0:
                # finish() does not wait out the interval for an update it makes obsolete.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._finishing.wait(), wait)
            if self._finishing.is_set():
                return
            await self._update(self._latest)

    async def _update(self, text: str) -> None:
        self._sequence += 1
        update = Activity(type=ActivityTypes.typing, text=text, entities=[StreamInfo(
            stream_id=self._stream_id, stream_type="streaming", stream_sequence=self._sequence)])
        try:
            await self._send(update)
        except Exception as exc:
            # The updates are a courtesy; the final message still brings the answer.
            self._updating = False
            if isinstance(exc, ClientResponseError) and _refused(exc):
                log.warning("Teams refused a streaming update (%s %s); the answer follows "
                            "when complete", exc.status, exc.message)
            else:
                log.exception("streaming update failed; the answer follows when complete")
            return
        self._shown = text

    async def _send(self, activity: Activity) -> ResourceResponse | None:
        try:
            return await self._turn.send_activity(activity)
        finally:
            self._sent_at = time.monotonic()

    async def finish(self, activity: Activity) -> ResourceResponse | None:
        """Send the final message. While streaming, Teams shows one message, created by the
        informative update and finished here; its id is the stream id, which is what
        feedback on it will name."""
        if not await self._opened():
            return await self._turn.send_activity(activity)
        self._finishing.set()
        if self._sender is not None:
            await asyncio.wait([self._sender])  # an update on its way arrives before the end
        # Teams' throttle counts the final message too; waiting here beats a 429 and a retry.
        await asyncio.sleep(max(0.0, self._sent_at + self._interval_s - time.monotonic()))
        final = activity.model_copy(update={"entities": [
            StreamInfo(stream_type="final", stream_id=self._stream_id),
            *(activity.entities or [])]})
        try:
            await self._turn.send_activity(final)
        except ClientResponseError as exc:
            if not _refused(exc):
                raise
            # Teams closes streams it ends itself (stopped by the person, over its time limit).
            log.warning("Teams refused to end the stream (%s %s); sending the answer as a new "
                        "message", exc.status, exc.message)
            return await self._turn.send_activity(activity)
        return ResourceResponse(id=self._stream_id)


def _refused(exc: ClientResponseError) -> bool:
    return 400 <= exc.status < 500
