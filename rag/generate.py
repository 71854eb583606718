"""Answers from the selected excerpts only: Claude with checked citations, or quoted excerpts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag import messages, prompts
from rag.citations import has_uncited_claims, renumber
from rag.extractive import by_document, keeps_whole, on_topic
from rag.ports import LLM, LLMRequest, TextSink
from rag.preview import NO_ANSWER_TOKEN, AnswerPreview
from rag.types import Candidate, Citation, Turn, Usage

EXCERPT_CHARS = 700
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
                       history: Sequence[Turn] = (), preview: TextSink | None = None) -> Draft:
        """The answer; with `preview`, the text so far is also handed out as it is written."""
        excerpts = "\n\n".join(excerpt_block(i, c) for i, c in enumerate(selected, start=1))
        system = prompts.load("answer")
        request = LLMRequest(
            model=self._model, system=system, max_tokens=self._max_tokens,
            messages=(("user", f"{_history_text(history)}Excerpts:\n\n{excerpts}\n\n"
                               f"Question: {question}"),),
            timeout_s=self._timeout_s,
            cache_system=len(system) >= self._cache_min_chars, purpose="answer")
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
    """Without an LLM: the selected passages that carry the question's terms, quoted verbatim,
    grouped under one citation per document; nothing on topic is a no-answer."""

    def __init__(self, documents: int = 3, note: str = messages.EXTRACTIVE_LABEL) -> None:
        self._documents = documents
        self._note = note

    async def generate(self, question: str, selected: Sequence[Candidate],
                       history: Sequence[Turn] = (), preview: TextSink | None = None) -> Draft:
        # Quoting takes no time: there is nothing to preview.
        groups = by_document(on_topic(question, selected), self._documents)
        if not groups:
            return Draft("", no_answer=True, extractive=True)
        parts = [self._note]
        for n, group in enumerate(groups, start=1):
            parts.append(f"**{group[0].chunk.title}** [{n}]\n" + "\n>\n".join(
                _quote(c.chunk.title, c.chunk.section, c.chunk.text) for c in group))
        citations = tuple(citation_for(n, group[0]) for n, group in enumerate(groups, start=1))
        return Draft("\n\n".join(parts), citations, extractive=True)


def _quote(title: str, section: str, text: str) -> str:
    body = text.strip() if keeps_whole(text) else _trim(text)
    lines = ([f"_{section}_", ""] if section and section != title else []) + body.splitlines()
    return "\n".join(f"> {line}" if line else ">" for line in lines)


def suggestions(candidates: Sequence[Candidate], limit: int = 3) -> tuple[Citation, ...]:
    """The closest distinct documents, for "you may want to look at"."""
    seen: dict[str, Candidate] = {}
    for candidate in sorted(candidates, key=lambda c: c.rank):
        seen.setdefault(candidate.chunk.doc_id, candidate)
    return tuple(citation_for(n, c) for n, c in enumerate(list(seen.values())[:limit], start=1))
