"""Fast mode without a model: which documents carry the question's meaning, and which of their
blocks (a paragraph, a list, a table's rows) answer it, to quote first."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag.markdown import parse, top_level
from rag.types import Candidate

_WORD = re.compile(r"[a-z0-9]+")
_HYPHENATED = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")
_STOP = frozenset("""
a about after all also an and any are as at be been before can could did do does doing for
from get gets getting got had has have how i if in into is it its me my need of on or our
please should so some tell than that the their them then there these they this those to was
we were what when where which who whom whose why will with would you your much many long
know want use using must am each every may might one way look like back few
""".split())  # noqa: SIM905 (a word list reads best as words)
_STEPS = re.compile(r"^\s*\d+[.)]\s+\S", re.M)

# A document is on topic when its best passage carries this share of what the question's
# terms weigh, and at least this share of the best document's: the others only share words.
MIN_COVERAGE = 0.5
RELATIVE = 0.9
# What a document's title and section name counts for, beside what its best block carries.
NAMED_BONUS = 0.5
# A document whose title or section carries this share of the question's weight looks like its
# answer: it may answer a question with a word the others never say (named beside its quote).
NAMED_SHARE = 0.5
# A table is cut to its header and the rows that carry the question's terms when at most this
# share of its rows do: the row that answers comes first, not the seventh of seven.
ROWS_SHARE = 0.5


def _stem(word: str) -> str:
    # Crude but symmetric: "rotation"/"rotate", "credentials"/"credential" meet at 5 letters.
    return word[:5] if len(word) > 5 else word.removesuffix("s") if len(word) > 3 else word


def terms(text: str) -> frozenset[str]:
    """The content words of a text, stemmed; stop words and question words left out. A
    hyphenated word also counts written as one ("Wi-Fi" is "wifi")."""
    lower = text.lower()
    words = [*_WORD.findall(lower), *(w.replace("-", "") for w in _HYPHENATED.findall(lower))]
    return frozenset(_stem(w) for w in words if w not in _STOP)


def keeps_whole(text: str) -> bool:
    """Numbered steps lose their meaning when cut, so they are quoted whole."""
    return len(_STEPS.findall(text)) >= 2


@dataclass(frozen=True)
class Weights:
    """What each of the question's terms says about a passage, judged against the documents
    retrieved for it (their inverse document frequency): a term most of them carry ("policy",
    the company's name) tells little, one that few carry decides, and one that none carries
    weighs most, so that a question whose key term the knowledge base lacks is not covered by
    the passages that share its easy words."""

    of_term: Mapping[str, float]
    unknown: frozenset[str] = frozenset()  # the terms no retrieved document carries

    def share(self, carried: Iterable[str], *, known: bool = False) -> float:
        """The weighted share of the question's terms carried; `known`: of those only that
        some retrieved document carries."""
        of = {t: w for t, w in self.of_term.items() if not known or t not in self.unknown}
        total = sum(of.values())
        return sum(of.get(t, 0.0) for t in set(carried)) / total if total else 0.0


def weights(question: str, pool: Sequence[Candidate]) -> Weights:
    documents: dict[str, set[str]] = {}
    for candidate in pool:
        c = candidate.chunk
        documents.setdefault(c.doc_id, set()).update(terms(f"{c.title} {c.section} {c.text}"))
    n = len(documents)
    found = {t: sum(t in d for d in documents.values()) for t in terms(question)}
    # A number no retrieved document carries ("(3)", "2 weeks") is no subject the knowledge
    # base lacks: it would make every question that has one "not covered".
    wanted = [t for t in found if found[t] or not t.isdigit()]
    return Weights({t: math.log(1 + (n + 1) / (found[t] + 1)) for t in wanted},
                   frozenset(t for t in wanted if not found[t]))


@dataclass(frozen=True)
class Match:
    candidate: Candidate
    coverage: float  # weighted share of the question's terms its best block carries
    named: float = 0.0  # weighted share its title and section carry

    @property
    def score(self) -> float:
        return self.coverage + NAMED_BONUS * self.named


def _units(candidate: Candidate) -> list[str]:
    """Where the question's terms must meet: each block with the heading above it, a table's
    each row with its header. Terms scattered over a long passage ("connect" in one step, "VPN"
    in another) are not its subject."""
    found = []
    for block in blocks(candidate):
        if block.kind == "heading":
            continue
        if block.kind == "table":
            lines = block.text.split("\n")
            found += [f"{block.heading} {lines[0]} {row}" for row in lines[2:]] or [block.text]
        else:
            found.append(f"{block.heading} {block.text}")
    return found or [candidate.chunk.text]


def match(wanted: frozenset[str], candidate: Candidate, weight: Weights) -> Match | None:
    """The passage's match, when one of its blocks (with the title and section) carries at
    least MIN_COVERAGE of the question's weight and either two of its terms or one in the
    title or section: "who is the CEO?" is not answered by a travel policy that mentions "CEO
    approval" in passing. When the question has a word no retrieved document says, only a
    passage whose title or section carries NAMED_SHARE of the question answers: the pricing
    page that mentions wholesale customers does not answer a question about their refunds,
    the expense policy's limits do answer one about client dinners."""
    c = candidate.chunk
    heading = wanted & terms(f"{c.title} {c.section}")
    best: frozenset[str] = frozenset()
    for unit in _units(candidate):
        carried = heading | (wanted & terms(unit))
        if weight.share(carried) > weight.share(best):
            best = carried
    # A word no retrieved document says is the subject the knowledge base lacks, or phrasing
    # ("how often are access reviews done?"): a passage named like the question tells which.
    lacks = bool(weight.unknown)
    if lacks and weight.share(heading, known=True) < NAMED_SHARE:
        return None
    coverage = weight.share(best, known=lacks)
    if coverage < MIN_COVERAGE or (len(best) < 2 and not heading):
        return None
    return Match(candidate, coverage, weight.share(heading, known=lacks))


def on_topic(question: str, selected: Sequence[Candidate],
             pool: Sequence[Candidate] = ()) -> list[Match]:
    """The selected passages of the documents about the question, in selection order.

    `pool` (all the candidates retrieved; else `selected`) weighs the question's terms. A
    document ranks by its best passage's coverage, plus NAMED_BONUS of what its title and
    section name: the VPN page is about the VPN, the laptop checklist only says to connect to
    it. A document counts when it reaches RELATIVE of the best one: a page that only shares
    the question's words with the one that answers it is not cited beside it.
    """
    wanted = terms(question)
    if not wanted:
        return [Match(c, 1.0) for c in selected]
    weight = weights(question, pool or selected)
    found = [m for m in (match(wanted, c, weight) for c in selected) if m is not None]
    score: dict[str, float] = {}
    named: dict[str, frozenset[str]] = {}
    for m in found:
        doc, c = m.candidate.chunk.doc_id, m.candidate.chunk
        score[doc] = max(score.get(doc, 0.0), m.score)
        named[doc] = wanted & terms(c.title)
    if not score:
        return []
    top = max(score, key=score.__getitem__)
    # A document whose title has fewer of the question's words than the best one's is its
    # sibling (production's runbook for a question about staging's), not a second answer.
    return [m for m in found if score[d := m.candidate.chunk.doc_id] >= RELATIVE * score[top]
            and not named[d] < named[top]]


def unmentioned(question: str, document: Sequence[Candidate], pool: Sequence[Candidate] = ()
                ) -> list[str]:
    """The question's words, as asked, that a document named like the question never says:
    the staging runbook quoted for a question about production's credentials says that it
    never mentions production. Only for a document whose title or section carries NAMED_SHARE
    of the question's weight (it looks like the answer), and only words weighing at least
    the average (the question's subject more than its phrasing)."""
    weight = weights(question, pool or document)
    wanted, doc = frozenset(weight.of_term), document[0].chunk.doc_id
    passages = [c.chunk for c in [*document, *pool] if c.chunk.doc_id == doc]
    named = max(weight.share(wanted & terms(f"{c.title} {c.section}"), known=True)
                for c in passages)
    if not wanted or named < NAMED_SHARE:
        return []
    said = set().union(*(terms(f"{c.title} {c.section} {c.text}") for c in passages))
    mean = sum(weight.of_term.values()) / len(wanted)
    missing = {t for t in wanted - said if weight.of_term[t] >= mean}
    words = []
    for word in _WORD.findall(question.lower()):
        if _stem(word) in missing and word not in _STOP:
            words.append(word)
            missing.discard(_stem(word))
    return words


def by_document(matches: Sequence[Match], limit: int) -> list[list[Candidate]]:
    """Passages grouped per document (best documents first, at most `limit`), each group in
    the document's own order so that steps read 1, 2, 3."""
    groups: dict[str, list[Match]] = {}
    for match in matches:
        groups.setdefault(match.candidate.chunk.doc_id, []).append(match)
    ranked = sorted(groups.values(), key=lambda g: -max(m.score for m in g))[:limit]
    return [sorted((m.candidate for m in g), key=lambda c: c.chunk.chunk_index) for g in ranked]


# --- Blocks: what of a document's passages to quote, the answering one first --------------


@dataclass(frozen=True)
class Block:
    """One top-level piece of a passage as written (a table may be cut to some rows)."""

    kind: str  # "heading", "table", "list", "code", "quote" or "text"
    text: str
    heading: str  # the heading it sits under ("" for none)
    order: tuple[int, int]  # (chunk index, position): the document's own order
    score: float = 0.0  # weighted share of the question's terms it carries


_KINDS = {"heading_open": "heading", "table_open": "table", "bullet_list_open": "list",
          "ordered_list_open": "list", "fence": "code", "code_block": "code",
          "blockquote_open": "quote"}


def blocks(candidate: Candidate) -> list[Block]:
    """A passage's top-level blocks, each with the heading above it inside the passage."""
    chunk = candidate.chunk
    text = chunk.text.replace("\r\n", "\n")
    # Above its first heading, a passage sits under the section it starts in ("A > B / C").
    heading = chunk.section.split(" / ")[0].split(" > ")[-1].strip()
    lines, found = text.split("\n"), []
    for position, (_, tokens) in enumerate(top_level(parse(text))):
        first = tokens[0]
        if first.map is None:
            continue
        body = "\n".join(lines[first.map[0]:first.map[1]]).strip("\n")
        kind = _KINDS.get(first.type, "text")
        if kind == "heading":
            heading = body.lstrip("#").strip()
        found.append(Block(kind, body, heading, (candidate.chunk.chunk_index, position)))
    return found


def _scored(block: Block, wanted: frozenset[str], weight: Weights) -> Block:
    if block.kind == "table":
        block = _rows_that_answer(block, wanted)
    carried = wanted & terms(f"{block.heading} {block.text}")
    return Block(block.kind, block.text, block.heading, block.order, weight.share(carried))


def _rows_that_answer(table: Block, wanted: frozenset[str]) -> Block:
    """The header and the rows that carry a term the header does not, when those are few."""
    lines = table.text.split("\n")
    header, rows = lines[:2], lines[2:]
    own = wanted & terms(header[0])
    hits = [row for row in rows if (wanted & terms(row)) - own]
    if not hits or len(hits) > ROWS_SHARE * len(rows):
        return table
    left = len(rows) - len(hits)
    note = f"\n\n_({left} more row{'s' if left > 1 else ''} in the source)_"
    return Block("table", "\n".join(header + hits) + note, table.heading, table.order)


def answering_blocks(question: str, group: Sequence[Candidate],
                     pool: Sequence[Candidate] = ()) -> list[Block]:
    """The blocks of one document's passages worth quoting: the one carrying most of the
    question's meaning first, then the others that carry any of it, in the document's order.
    A question with no searchable terms gets the passages whole, in order."""
    wanted = terms(question)
    every = [b for c in group for b in blocks(c) if b.kind != "heading"]
    if not wanted:
        return every
    weight = weights(question, pool or group)
    scored = [_scored(b, wanted, weight) for b in every]
    useful = [b for b in scored if b.score > 0]
    if not useful:
        return every
    lead = max(useful, key=lambda b: (b.score, [-n for n in b.order]))
    return [lead, *(b for b in useful if b is not lead)]
