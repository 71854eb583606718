"""Which selected passages carry the question's terms: the fast-mode answer quotes only those."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.types import Candidate

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("""
a about after all also an and any are as at be been before can could did do does doing for
from get gets getting got had has have how i if in into is it its me my need of on or our
please should so some tell than that the their them then there these they this those to was
we were what when where which who whom whose why will with would you your much many long
know want use using
""".split())  # noqa: SIM905 (a word list reads best as words)
_TABLE = re.compile(r"^\s*\|.*\|\s*$", re.M)
_STEPS = re.compile(r"^\s*\d+[.)]\s+\S", re.M)


def _stem(word: str) -> str:
    # Crude but symmetric: "rotation"/"rotate", "credentials"/"credential" meet at 5 letters.
    return word[:5] if len(word) > 5 else word.removesuffix("s") if len(word) > 3 else word


def terms(text: str) -> frozenset[str]:
    """The content words of a text, stemmed; stop words and question words left out."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP)


def keeps_whole(text: str) -> bool:
    """Tables and numbered steps lose their meaning when cut, so they are quoted whole."""
    return bool(_TABLE.search(text) or len(_STEPS.findall(text)) >= 2)


@dataclass(frozen=True)
class Match:
    candidate: Candidate
    coverage: float  # share of the question's terms the passage carries


def on_topic(question: str, selected: Sequence[Candidate]) -> list[Match]:
    """The selected passages about the question, in selection order.

    A passage qualifies when it carries at least half of the question's terms and either
    two of them or one in its title or section: "who is the CEO?" is not answered by a travel
    policy that mentions "CEO approval" in passing.
    """
    wanted = terms(question)
    if not wanted:
        return [Match(c, 1.0) for c in selected]
    found: list[Match] = []
    for candidate in selected:
        c = candidate.chunk
        heading = terms(f"{c.title} {c.section}")
        carried = wanted & (terms(c.text) | heading)
        coverage = len(carried) / len(wanted)
        if coverage >= 0.5 and (len(carried) >= 2 or carried & heading):
            found.append(Match(candidate, coverage))
    return found


def by_document(matches: Sequence[Match], limit: int) -> list[list[Candidate]]:
    """Passages grouped per document (best documents first, at most `limit`), each group in
    the document's own order so that steps read 1, 2, 3."""
    groups: dict[str, list[Match]] = {}
    for match in matches:
        groups.setdefault(match.candidate.chunk.doc_id, []).append(match)
    ranked = sorted(groups.values(), key=lambda g: -max(m.coverage for m in g))[:limit]
    return [sorted((m.candidate for m in g), key=lambda c: c.chunk.chunk_index) for g in ranked]
