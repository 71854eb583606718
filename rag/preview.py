"""Previews of an answer while the model writes it: citations renumbered, refusals held back."""

from __future__ import annotations

import logging
import re

from rag.citations import CODE_SPAN, renumber
from rag.ports import TextSink

log = logging.getLogger(__name__)

NO_ANSWER_TOKEN = "NO_ANSWER"
_OPEN_MARKER = re.compile(r"\[[\d,\s]*$")  # "[", "[1", "[1, " at the very end: not finished


def preview_text(raw: str, excerpt_count: int) -> str:
    """The part of a partial answer that is safe to show now.

    Markers are renumbered exactly as the final post-check will (by order of appearance), so
    the preview grows into the final text; an unfinished marker waits for its bracket, and
    a reply that is, or may still become, the refusal token shows nothing.
    """
    start = raw.lstrip()
    if start.startswith(NO_ANSWER_TOKEN) or NO_ANSWER_TOKEN.startswith(start):
        return ""
    return renumber(_OPEN_MARKER.sub("", _closed_code(raw)), excerpt_count).text


def _closed_code(raw: str) -> str:
    """`raw` up to an unclosed code span: inside one, `[1]` is code, not a citation."""
    end = 0
    for span in CODE_SPAN.finditer(raw):
        end = span.end()
    opening = raw.find("`", end)
    return raw if opening < 0 else raw[:opening]


class AnswerPreview:
    """Feeds model deltas in, hands display-ready previews (the whole text so far) out.

    The preview is a courtesy: if the sink fails (the chat platform refused an update), the
    answer itself must still arrive, so the failure is logged once and previews stop.
    """

    def __init__(self, excerpt_count: int, sink: TextSink) -> None:
        self._count = excerpt_count
        self._sink: TextSink | None = sink
        self._raw = ""
        self._shown = ""

    async def feed(self, delta: str) -> None:
        self._raw += delta
        shown = preview_text(self._raw, self._count)
        if self._sink is None or not shown or shown == self._shown:
            return
        self._shown = shown
        try:
            await self._sink(shown)
        except Exception:
            log.exception("answer preview failed; the answer will be sent when it is complete")
            self._sink = None
