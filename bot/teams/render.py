"""Teams rendering of an Answer: Markdown text, citation pop-ups, AI label, feedback, no pings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.render.notes import answer_notes, error_text
from rag import messages
from rag.citations import CODE_SPAN
from rag.i18n import tr
from rag.types import UNANSWERED, Answer, AnswerStatus, Chunk, Citation

MAX_CITATIONS = 20  # Teams rejects more citation entities in one message
NAME_LIMIT = 80
ABSTRACT_LIMIT = 160
MAX_KEYWORDS = 3
KEYWORD_LIMIT = 28

# Teams pings only through <at>…</at> plus a mention entity. Sift never sends mention
# entities; the tags are removed as well, so no document or model text can look like one.
_AT_TAG = re.compile(r"<\s*/?\s*at\b[^>]*>", re.IGNORECASE)
# Other HTML would be rendered by Teams (links with misleading text, images): shown as text.
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
_SPACES = re.compile(r"\s+")
_HEADING_MARKS = re.compile(r"(^|\n)\s*#{1,6}\s*")
_URL = re.compile(r"https?://\S+", re.IGNORECASE)
# The end of a text still being written that `no_pings` cannot settle yet: it may still become
# an <at> tag (removed) or an HTML tag (shown as text).
_OPEN_TAG_END = re.compile(r"<\s*/?\s*(?:at?|at[^\w>][^>]*)?\Z", re.IGNORECASE)


@dataclass(frozen=True)
class TeamsCitation:
    """One citation pop-up: the `[position]` marker in the text opens it."""

    position: int
    name: str
    abstract: str
    url: str | None = None
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class TeamsReply:
    """A Teams message: Markdown text plus what the AI entity and channelData carry."""

    text: str
    citations: tuple[TeamsCitation, ...] = ()
    ai_generated: bool = False  # the "AI generated" label
    feedback: bool = False  # Teams' built-in thumbs up/down


def no_pings(text: str) -> str:
    """Drop `<at>` tags and show other HTML as text; code spans keep their characters."""
    text = _AT_TAG.sub("", text)
    pieces, last = [], 0
    for code in CODE_SPAN.finditer(text):
        pieces.append(_HTML_OPEN.sub("&lt;", text[last:code.start()]))
        pieces.append(code.group(0))
        last = code.end()
    pieces.append(_HTML_OPEN.sub("&lt;", text[last:]))
    return "".join(pieces)


def no_pings_so_far(text: str) -> str:
    """`no_pings` for an answer still being written: every result is a prefix of the next.

    Teams requires each streamed update to extend the one before, so a trailing fragment whose
    rendering depends on what comes next (`<`, `<a`, `<at id="`) waits for its `>`.
    """
    tail = _OPEN_TAG_END.search(text)
    return no_pings(text[:tail.start()] if tail else text)


def plain(text: str) -> str:
    """One line of plain text for pop-up fields and link labels."""
    return _SPACES.sub(" ", _AT_TAG.sub("", text)).strip()


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def safe_url(url: str) -> str | None:
    url = url.strip()
    if not _URL.fullmatch(url):
        return None
    return url.replace("(", "%28").replace(")", "%29").replace("<", "%3C").replace(">", "%3E")


def link(url: str, title: str) -> str:
    label = plain(title).replace("[", "(").replace("]", ")").replace("<", "‹") or url
    safe = safe_url(url)
    return f"[{label}]({safe})" if safe else label


def _chunk(answer: Answer, citation: Citation) -> Chunk | None:
    return next((c.chunk for c in answer.candidates if c.chunk.chunk_id == citation.chunk_id),
                None)


def citation_entity(answer: Answer, citation: Citation) -> TeamsCitation:
    """The pop-up for `[n]`: title (and section), the cited excerpt, up to three tags."""
    chunk = _chunk(answer, citation)
    name, abstract = citation.title, ""
    keywords: tuple[str, ...] = ()
    if chunk is not None:
        if chunk.section and chunk.section != citation.title:
            name = f"{citation.title} › {chunk.section}"
        abstract = clip(plain(_HEADING_MARKS.sub(r"\1", chunk.text)), ABSTRACT_LIMIT)
        keywords = tuple(clip(plain(t), KEYWORD_LIMIT) for t in chunk.tags if plain(t))
    return TeamsCitation(
        position=citation.n,
        name=clip(plain(name), NAME_LIMIT) or f"Source {citation.n}",
        abstract=abstract,
        url=safe_url(citation.url),
        keywords=keywords[:MAX_KEYWORDS],
    )


def _list(heading: str, lines: Sequence[str]) -> str:
    return f"**{heading}**\n\n" + "\n".join(f"- {line}" for line in lines)


def _sources(citations: Sequence[Citation]) -> str:
    """The numbered list a `[n]` marker points at when no pop-up opens for it."""
    return _list(tr(messages.SOURCES_HEADING),
                 [f"[{c.n}] {link(c.url, c.title)}" for c in citations])


def _notes(answer: Answer) -> list[str]:
    return [f"_{note}_" for note in answer_notes(answer)]


def render_notice(text: str) -> TeamsReply:
    """One sentence: a refusal, an error with its reference, a notice."""
    return TeamsReply(no_pings(tr(text)))


def render_answer(answer: Answer, *, citation_entities: bool = True) -> TeamsReply:
    """The answer as one Teams message.

    With `citation_entities` the `[n]` markers open pop-ups (title, URL, excerpt), and the
    markers past Teams' cap of MAX_CITATIONS are listed after the text; without, for clients
    that do not render pop-ups, a numbered list of every source follows the text instead.
    """
    if answer.status is AnswerStatus.ERROR:
        return render_notice(error_text(answer))
    parts = [no_pings(answer.text)]
    if answer.status is AnswerStatus.NO_ANSWER and answer.suggestions:
        parts.append(_list(tr(messages.NO_ANSWER_SUGGESTIONS),
                           [link(c.url, c.title) for c in answer.suggestions]))
    citations: tuple[TeamsCitation, ...] = ()
    listed = answer.citations
    if citation_entities:
        citations = tuple(citation_entity(answer, c) for c in answer.citations[:MAX_CITATIONS])
        # Only the markers past the cap open nothing; listing the first twenty again would
        # repeat what their pop-ups show and push the answer's notes far down.
        listed = answer.citations[MAX_CITATIONS:]
    if listed:
        parts.append(_sources(listed))
    parts += _notes(answer)
    # The label means a language model took part (understanding, grading or writing).
    ai = answer.status not in UNANSWERED and bool(answer.models)
    return TeamsReply("\n\n".join(parts), citations, ai_generated=ai, feedback=True)
