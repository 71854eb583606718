"""Which natural language a text is written in (py3langid), and the English name of one."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Any

from rag.ports import LanguageCounts

log = logging.getLogger(__name__)

# Below this share of the probability the guess is noise: short English questions full of
# product names ("Is AWS IoT Greengrass HIPAA compliant?") score 0.1 to 0.4 for English.
MIN_CONFIDENCE = 0.5
MIN_WORDS = 3  # "VPN?" or "hi" says nothing about a language
SAMPLE_CHARS = 3000  # a document's language shows in its first pages; the rest costs time


@functools.cache
def _identifier() -> Any:
    # Imported here: the model (4 MB, shipped in the wheel) loads in about half a second, and
    # `sift --help` must not pay for it.
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect(text: str) -> str:
    """The text's ISO 639-1 code ("de"), or "" when it is too short or the guess is unsure."""
    sample = text[:SAMPLE_CHARS]
    # Japanese and Chinese have no spaces between words: count characters there instead.
    if len(sample.split()) < MIN_WORDS and len(sample.strip()) < 8:
        return ""
    if len(sample.split()) < MIN_WORDS and sample.isascii():
        return ""
    code, confidence = _identifier().classify(sample)
    return str(code) if confidence >= MIN_CONFIDENCE else ""


def differs(one: str, other: str) -> bool:
    """Two known languages that are not the same (unknown never differs)."""
    return bool(one and other and one != other)


def english_name(code: str) -> str:
    """ "de" -> "German", for the model's instructions; the code itself when Babel has none."""
    from babel import Locale, UnknownLocaleError

    try:
        return str(Locale.parse(code).english_name or code)
    except (UnknownLocaleError, ValueError):
        return code


class CorpusLanguage:
    """The language most of the indexed chunks are in, re-counted every few minutes.

    A question waits at most `wait_s` for a count: an index that is slow or away must not
    delay its answer (nor its error), so the last count known (or "") stands in meanwhile.
    """

    def __init__(self, counts: LanguageCounts, ttl_s: float = 300.0,
                 wait_s: float = 1.0) -> None:
        self._counts = counts
        self._ttl_s = ttl_s
        self._wait_s = wait_s
        self._known: tuple[float, str] | None = None
        self._counting: asyncio.Task[None] | None = None

    async def language(self) -> str:
        if self._known is not None and self._known[0] > time.monotonic():
            return self._known[1]
        if self._counting is None or self._counting.done():
            self._counting = asyncio.create_task(self._count())
        await asyncio.wait((self._counting,), timeout=self._wait_s)
        return self._known[1] if self._known else ""

    async def _count(self) -> None:
        try:
            counts = await self._counts.count_by_language()
        except Exception as exc:
            # Cross-language search is a refinement: without the count, questions are
            # searched as asked, as before; the next question counts again.
            log.warning("could not count the indexed languages: %s", exc)
            return
        known = {code: n for code, n in counts.items() if code}
        main = max(known, key=lambda code: known[code]) if known else ""
        self._known = (time.monotonic() + self._ttl_s, main)


def display_name(code: str, language: str) -> str:
    """ "en" as the person reads it: "Englisch" in German, "英語" in Japanese."""
    from babel import Locale, UnknownLocaleError

    try:
        return str(Locale.parse(code).get_display_name(language) or code)
    except (UnknownLocaleError, ValueError):
        return code


def of_document(declared: str, body: str) -> str:
    """A document's language: what its source declares ("en-us" -> "en"), else detected."""
    code = declared.strip().replace("_", "-").split("-")[0].lower()
    return code or detect(body)
