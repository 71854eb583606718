"""Answers from the selected excerpts only: Claude with checked citations, or quoted excerpts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag import messages, prompts
from rag.citations import has_uncited_claims, renumber
from rag.extractive import (
    Block,
    answering_blocks,
    by_document,
    keeps_whole,
    on_topic,
    unmentioned,
)
from rag.i18n import tr
from rag.language import english_name
from rag.ports import LLM, LLMRequest, TextSink
from rag.preview import NO_ANSWER_TOKEN, AnswerPreview
from rag.types import Candidate, Citation, QuestionImage, Turn, Usage

EXCERPT_CHARS = 700  # one paragraph at most, cut at a sentence
QUOTE_CHARS = 1400  # one document's quote: the answering block, then what fits
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass(frozen=True)
class Draft:
    text: str
    citations: tuple[Citation, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    no_answer: bool = False
    extractive: bool = False
    uncited_claims: bool = False


def citation_for(n: int, candidate: Candidate) -> Citation:
    c = candidate.chunk
    return Citation(n=n, doc_id=c.doc_id, title=c.title, url=c.url, chunk_id=c.chunk_id)


def excerpt_block(n: int, candidate: Candidate) -> str:
    c = candidate.chunk
    body = c.text.replace("</excerpt>", "</ excerpt>")
    head = f'<excerpt n="{n}" title="{c.title}"' + (f' section="{c.section}"' if c.section else "")
    return f"{head}>\n{body}\n</excerpt>"


def _history_text(history: Sequence[Turn]) -> str:
    if not history:
        return ""
    lines = [f"{t.role}: {t.text}" for t in history[-6:]]
    return "Earlier in this conversation (context only):\n" + "\n".join(lines) + "\n\n"


def language_request(language: str) -> str:
    """The answer in the question's language; the excerpts keep theirs (titles, quotes)."""
    if not language or language == "en":  # the prompt's own language: nothing to ask
        return ""
    name = english_name(language)
    return (f"Write the answer in {name}, the language of the question, even where the "
            f"excerpts are in another language; keep source titles as they are.\n\n")


class LLMGenerator:
    """The answer model writes from numbered excerpts; the post-check keeps citations honest."""

    def __init__(self, llm: LLM, model: str, max_tokens: int, cache_min_tokens: int = 1024,
                 timeout_s: float | None = None) -> None:
        self._llm = llm
        self._model = model
        self._max_tokens = max_tokens
        self._cache_min_chars = cache_min_tokens * 4
        self._timeout_s = timeout_s

    async def generate(self, question: str, selected: Sequence[Candidate],
                       history: Sequence[Turn] = (), preview: TextSink | None = None,
                       images: tuple[QuestionImage, ...] = (), *, language: str = "") -> Draft:
        """The answer; with `preview`, the text so far is also handed out as it is written.
        `language`: the question's, which the answer is written in."""
        excerpts = "\n\n".join(excerpt_block(i, c) for i, c in enumerate(selected, start=1))
        system = prompts.load("answer")
        request = LLMRequest(
            model=self._model, system=system, max_tokens=self._max_tokens,
            messages=(("user", f"{_history_text(history)}Excerpts:\n\n{excerpts}\n\n"
                               f"{language_request(language)}Question: {question}"),),
            timeout_s=self._timeout_s,
            cache_system=len(system) >= self._cache_min_chars, purpose="answer",
            images=images)
        if preview is None:
            response = await self._llm.complete(request)
        else:
            response = await self._llm.stream(request, AnswerPreview(len(selected), preview).feed)
        text = response.text.strip()
        if not text or text.startswith(NO_ANSWER_TOKEN):
            return Draft("", usage=response.usage, model=response.model, no_answer=True)
        checked = renumber(text, len(selected))
        citations = tuple(citation_for(new, selected[old - 1])
                          for new, old in enumerate(checked.sources, start=1))
        return Draft(checked.text, citations, response.usage, response.model,
                     uncited_claims=has_uncited_claims(checked.text, checked.sources))


def _trim(text: str, limit: int = EXCERPT_CHARS) -> str:
    if len(text) <= limit:
        return text.strip()
    cut = text[:limit]
    ends = [m.start() for m in _SENTENCE_END.finditer(cut)]
    return (cut[: ends[-1]] if ends and ends[-1] > limit // 2 else cut).strip() + " …"


class ExtractiveGenerator:
    """Without an LLM: the documents that carry the question's meaning, one citation each,
    quoted verbatim, the block that answers first; nothing on topic is a no-answer."""

    def __init__(self, documents: int = 3, note: str = messages.EXTRACTIVE_LABEL) -> None:
        self._documents = documents
        self._note = note

    async def generate(self, question: str, selected: Sequence[Candidate],
                       history: Sequence[Turn] = (), preview: TextSink | None = None, *,
                       pool: Sequence[Candidate] = (), subject: str = "") -> Draft:
        """`pool`: every candidate retrieved for the question, which weighs its terms (a word
        every candidate has tells them apart no better than a stop word). `subject`: the
        earlier question a follow-up continues, which decides the documents on topic while
        the follow-up's own words pick what of them is quoted first."""
        # Quoting takes no time: there is nothing to preview.
        groups = by_document(on_topic(subject or question, selected, pool), self._documents)
        if not groups:
            return Draft("", no_answer=True, extractive=True)
        parts = [tr(self._note)]
        weighed = pool or selected
        for n, group in enumerate(groups, start=1):
            chunk = group[0].chunk
            quoted = _quote(chunk.title, answering_blocks(question, group, weighed))
            missing = unmentioned(question, group, weighed)
            caveat = tr(messages.NOT_MENTIONED).format(
                words=", ".join(f"“{w}”" for w in missing)) + "\n" if missing else ""
            parts.append(f"**{chunk.title}** [{n}]\n{caveat}{quoted}")
        citations = tuple(citation_for(n, group[0]) for n, group in enumerate(groups, start=1))
        return Draft("\n\n".join(parts), citations, extractive=True)


def _quote(title: str, blocks: Sequence[Block], budget: int = QUOTE_CHARS) -> str:
    """The blocks as one quote, each under its heading when that changes; prose is trimmed,
    tables, lists and code are whole; past the budget, only the first block is kept."""
    lines: list[str] = []
    shown_heading = ""
    used = 0
    for number, block in enumerate(blocks):
        body = block.text if block.kind != "text" or keeps_whole(block.text) \
            else _trim(block.text)
        if number and used + len(body) > budget:
            break
        heading = block.heading if block.heading != title else ""
        if heading and heading != shown_heading:
            lines += [f"_{heading}_", ""]
            shown_heading = heading
        lines += [*body.splitlines(), ""]
        used += len(body)
    return "\n".join(f"> {line}" if line else ">" for line in lines[:-1])


def suggestions(candidates: Sequence[Candidate], limit: int = 3) -> tuple[Citation, ...]:
    """The closest distinct documents, for "you may want to look at"."""
    seen: dict[str, Candidate] = {}
    for candidate in sorted(candidates, key=lambda c: c.rank):
        seen.setdefault(candidate.chunk.doc_id, candidate)
    return tuple(citation_for(n, c) for n, c in enumerate(list(seen.values())[:limit], start=1))
