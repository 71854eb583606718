"""Sift's own sentences in the person's language: gettext catalogues in rag/locales, read by
Babel at first use; English (the sentence as written in rag/messages.py) is the fallback."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

log = logging.getLogger(__name__)

ENGLISH = "en"
LANGUAGES = (ENGLISH, "de", "fr", "es", "pt", "ja")  # a catalogue each (English: none needed)
DOMAIN = "sift"
LOCALES = Path(__file__).parent / "locales"

# The language of the person Sift is talking to, set once where a surface receives their
# message or click (like the correlation id): every sentence said while handling it reads it.
_speaking: ContextVar[str] = ContextVar("sift_language", default=ENGLISH)


def supported(tag: str) -> str:
    """A platform's locale tag ("de-DE", "pt_BR", "ja") as one of LANGUAGES; "" if none."""
    code = tag.strip().replace("_", "-").split("-")[0].lower()
    return code if code in LANGUAGES else ""


def from_accept_language(header: str) -> str:
    """The browser's most preferred language Sift speaks (RFC 9110 quality values)."""
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                continue
        code = supported(tag)
        if code and quality > 0:
            ranked.append((-quality, position, code))
    return min(ranked)[2] if ranked else ""


@contextlib.contextmanager
def speaking(tag: str) -> Iterator[str]:
    """Within this block Sift's sentences are in `tag`'s language (English when unsupported)."""
    token = _speaking.set(supported(tag) or ENGLISH)
    try:
        yield _speaking.get()
    finally:
        _speaking.reset(token)


def current() -> str:
    return _speaking.get()


def tr(text: str, language: str | None = None) -> str:
    """`text` (an English sentence of rag/messages.py) in `language`, by default the person's
    now; the English text itself when the catalogue lacks it."""
    code = supported(language) if language is not None else _speaking.get()
    if not code or code == ENGLISH:
        return text
    return _catalogue(code).get(text, text)


@functools.cache
def _catalogue(code: str) -> dict[str, str]:
    """msgid -> msgstr of one language; read once (a few milliseconds), never compiled, so the
    repository's own .po files are all a fresh machine or the image needs."""
    from babel.messages.pofile import read_po

    path = LOCALES / code / "LC_MESSAGES" / f"{DOMAIN}.po"
    try:
        with path.open("rb") as po:
            catalogue = read_po(po, locale=code, domain=DOMAIN)
    except OSError as exc:
        log.error("no %s catalogue at %s, so English is used: %s", code, path, exc)
        return {}
    return {str(m.id): str(m.string) for m in catalogue
            if m.id and isinstance(m.id, str) and m.string and not m.fuzzy}
