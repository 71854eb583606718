"""An answer streamed into Slack while Claude writes it, then completed with the final answer."""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.slack.outbound import SlackOutbound, StreamBroken
from bot.slack.render import (
    NO_BUTTONS,
    Buttons,
    live_markdown,
    render_answer,
    render_stream,
    streamable,
)
from bot.slack.spec import APPEND_EVERY_S
from rag.logcontext import current_correlation_id
from rag.types import Answer

log = logging.getLogger(__name__)

_UNSETTLED = re.compile(r"[@<]\S*\Z")  # the last word, from its first `@` or `<`


@dataclass(frozen=True)
class StreamTarget:
    """Where the live reply goes, and whom Slack shows it to while it streams."""

    channel: str
    thread_ts: str
    team: str
    user: str


def settled(preview: str) -> str:
    """The part of a preview whose stream Markdown can only grow, never change.

    `@chan` is left alone but `@channel` is defused, and appended text cannot be taken back:
    so the last word waits from its first `@` or `<` until a later word follows it.
    """
    return _UNSETTLED.sub("", preview)


async def complete_in_place(outbox: SlackOutbound, channel: str, ts: str, answer: Answer,
                            buttons: Buttons = NO_BUTTONS, markdown: bool = False) -> None:
    """The whole answer into a message that already shows part of it: a new post would
    leave a half answer next to a whole one."""
    try:
        await outbox.update(channel, ts, render_answer(answer, buttons=buttons,
                                                       markdown=markdown))
    except Exception:
        log.exception("could not complete the streamed answer %s (reference %s)", ts,
                      current_correlation_id())


class LiveAnswer:
    """One answer's live reply: `show` is the preview sink, `finish` completes the message,
    `replay` streams an answer that had no previews.

    Showing is a courtesy: a refused start or a failed append ends the previews, never the
    answer; `finish` then puts the whole answer in place.
    """

    def __init__(self, outbox: SlackOutbound, target: StreamTarget,
                 append_every_s: float = APPEND_EVERY_S,
                 clock: Callable[[], float] = time.monotonic,
                 buttons: Buttons = NO_BUTTONS, markdown: bool = False) -> None:
        self._out = outbox
        self._to = target
        self._buttons = buttons
        self._markdown = markdown  # a completed answer in a markdown block (render_answer)
        self._every = append_every_s
        self._clock = clock
        self._ts: str | None = None
        self._sent = ""  # the stream Markdown appended so far
        self._shown = ""  # the stream Markdown of the latest preview
        self._last = -math.inf
        self._quiet = False  # previews no longer go out
        self._refused = False  # Slack would not start a stream for this answer
        self._broken = False  # an append failed: what the message shows is unknown

    @property
    def can_stream(self) -> bool:
        """False once Slack refused to start a stream: the answer is then posted at once."""
        return not self._refused

    async def show(self, preview: str) -> None:
        """Called with the whole answer so far; the stream starts with the first preview."""
        if self._quiet:
            return
        self._shown = live_markdown(settled(preview))
        try:
            if self._ts is None:
                self._ts = await self._out.start_stream(
                    self._to.channel, self._to.thread_ts, team=self._to.team, user=self._to.user)
            if self._clock() - self._last >= self._every:
                await self._flush(self._ts)
        except Exception as exc:
            log.warning("live answer stopped (%s); the answer follows when complete", exc)
            self._quiet = True
            self._refused = self._ts is None
            self._broken = not self._refused

    async def _flush(self, ts: str) -> None:
        if not self._shown.startswith(self._sent):
            # The text was rewritten (rare): what is on screen stays until finish replaces it.
            log.info("answer preview diverged from the streamed text; previews stop")
            self._quiet = True
            return
        await self._append(ts, self._shown)

    async def _append(self, ts: str, markdown: str) -> None:
        rest = markdown[len(self._sent):]
        if rest:
            await self._out.append_stream(self._to.channel, ts, rest)
            self._sent = markdown
            self._last = self._clock()

    async def finish(self, answer: Answer) -> str | None:
        """Completes the live reply with `answer` and returns its ts; None when nothing was
        shown live, and the answer is the caller's to deliver as usual."""
        ts = self._ts
        if ts is None:
            return None
        self._quiet = True
        final = live_markdown(answer.text) if streamable(answer) else None
        whole = final is not None and not self._broken and final.startswith(self._sent)
        try:
            if final is not None and whole:
                await self._append(ts, final)
            await self._out.stop_stream(self._to.channel, ts,
                                        render_stream(answer, buttons=self._buttons).blocks
                                        if whole else ())
        except Exception as exc:
            log.warning("stream of %s broke off (%s); completing it in place", ts, exc)
            whole = False
        if not whole:  # excerpts after a failed model, or text the preview did not foresee
            await complete_in_place(self._out, self._to.channel, ts, answer, self._buttons,
                                    self._markdown)
        return ts

    async def replay(self, answer: Answer) -> str:
        """An answer that was not previewed (no model wrote it), streamed in paragraphs.
        Raises SlackApiError when the stream could not start: nothing is shown then."""
        to = self._to
        try:
            return await self._out.stream(to.channel, to.thread_ts,
                                          render_stream(answer, buttons=self._buttons),
                                          team=to.team, user=to.user)
        except StreamBroken as broken:
            log.warning("stream %s broke off (%s)", broken.ts, broken.__cause__)
            await complete_in_place(self._out, to.channel, broken.ts, answer, self._buttons,
                                    self._markdown)
            return broken.ts
