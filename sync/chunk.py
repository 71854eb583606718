"""Markdown-aware chunking: packs whole sections, splits long ones with overlap (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from sync.blocks import TOKEN, Block, count_tokens, parse_blocks
from sync.plain import plain_text

# Bump when the chunks or what the model reads of them change: it is part of every document's
# content hash, so the next sync re-chunks and re-embeds everything instead of mixing old and
# new. (2: the model reads the chunk's plain text, `embedding_text`; 3: blocks and plain text
# from one Markdown parser, markdown-it: lists are one block, tables lose their rules.)
CHUNKER_VERSION = 3

_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s")


@dataclass(frozen=True)
class ChunkingConfig:
    """Sizes in approximate tokens (see sync.blocks.count_tokens)."""

    target_tokens: int = 400
    overlap_tokens: int = 50
    min_tokens: int = 50  # smaller pieces merge into a neighbour

    def fingerprint(self) -> str:
        return (f"chunker{CHUNKER_VERSION}:{self.target_tokens}:{self.overlap_tokens}:"
                f"{self.min_tokens}")


@dataclass(frozen=True)
class TextChunk:
    index: int
    text: str
    section: str  # the heading path, "Limits > Receipts"
    tokens: int


@dataclass
class _Unit:
    """A piece the packer never cuts: a block, or a list item / sentence / window of one."""

    text: str
    tokens: int
    path: tuple[str, ...]
    kind: str
    sep: str  # what joins it to the unit before it


@dataclass
class _Draft:
    units: list[_Unit] = field(default_factory=list)
    overlap: str = ""
    overlap_tokens: int = 0
    continued: bool = False  # a later piece of a section too long for one chunk

    @property
    def tokens(self) -> int:
        return self.overlap_tokens + sum(u.tokens for u in self.units)


def embedding_text(title: str, section: str, text: str) -> str:
    """What the embedder sees: title and section make a chunk meaningful on its own, and the
    text's words without Markdown's syntax (`plain_text`): a fifth fewer word pieces on the AWS
    pages, so a sync that much quicker. The stored text, which keyword search and the
    answer read, keeps its Markdown."""
    head = f"{title}\n{section}" if section else title
    return f"{head}\n\n{plain_text(text)}"


def chunk_markdown(body: str, config: ChunkingConfig | None = None,
                   title: str = "") -> list[TextChunk]:
    config = config or ChunkingConfig()
    drafts: list[_Draft] = []
    for section in _sections(parse_blocks(body)):
        size = sum(b.tokens for b in section)
        if size <= config.target_tokens:
            if drafts and drafts[-1].tokens + size <= config.target_tokens:
                drafts[-1].units.extend(_whole(section))
            else:
                drafts.append(_Draft(_whole(section)))
        else:
            drafts.extend(_split(section, config))
    drafts = _merge_tiny([d for d in drafts if d.units], config.min_tokens)
    return [_render(i, d, title) for i, d in enumerate(drafts)]


def _sections(blocks: list[Block]) -> Iterator[list[Block]]:
    current: list[Block] = []
    for block in blocks:
        if block.kind == "heading" and current:
            yield current
            current = []
        current.append(block)
    if current:
        yield current


def _whole(section: list[Block]) -> list[_Unit]:
    return [_Unit(b.text, b.tokens, b.path, b.kind, "\n\n") for b in section]


def _units(block: Block, limit: int) -> list[_Unit]:
    """Cut a long prose block at list items, then sentences, then token windows."""
    if block.kind != "text" or block.tokens <= limit:
        return [_Unit(block.text, block.tokens, block.path, block.kind, "\n\n")]
    units: list[_Unit] = []
    for item in _items(block.text):
        item_tokens = count_tokens(item)
        pieces = [item] if item_tokens <= limit else list(_sentences(item, limit))
        for piece in pieces:
            sep = "\n\n" if not units else ("\n" if piece is item else " ")
            units.append(_Unit(piece, count_tokens(piece), block.path, "text", sep))
    return units


def _items(text: str) -> list[str]:
    """List items (with their indented continuation lines) or, for prose, the whole text."""
    items: list[list[str]] = []
    for line in text.split("\n"):
        if not items or _LIST_ITEM.match(line):
            items.append([line])
        else:
            items[-1].append(line)
    return ["\n".join(item) for item in items]


def _sentences(text: str, limit: int) -> Iterator[str]:
    for sentence in _SENTENCE.split(text):
        if count_tokens(sentence) <= limit:
            if sentence.strip():
                yield sentence.strip()
        else:
            yield from _windows(sentence, limit)


def _windows(text: str, limit: int) -> Iterator[str]:
    """Token-boundary cuts every `limit` tokens: the last resort for run-on text."""
    starts = [m.start() for m in TOKEN.finditer(text)]
    for first in range(0, len(starts), limit):
        end = starts[first + limit] if first + limit < len(starts) else len(text)
        yield text[starts[first]:end].strip()


def _split(section: list[Block], config: ChunkingConfig) -> list[_Draft]:
    pieces = [_Draft()]
    for block in section:
        for unit in _units(block, config.target_tokens):
            current = pieces[-1]
            full = current.tokens + unit.tokens > config.target_tokens
            # A heading stays with what follows it, even when that is one oversized block.
            if full and any(u.kind != "heading" for u in current.units):
                overlap = _tail(current.units[-1], config.overlap_tokens)
                pieces.append(_Draft(overlap=overlap, overlap_tokens=count_tokens(overlap),
                                     continued=True))
            pieces[-1].units.append(unit)
    return pieces


def _tail(unit: _Unit, budget: int) -> str:
    """The last sentences (or words) of a prose unit, repeated at the start of the next piece."""
    if unit.kind != "text" or budget <= 0:
        return ""
    tail: list[str] = []
    used = 0
    for sentence in reversed([s for s in _SENTENCE.split(unit.text) if s.strip()]):
        tokens = count_tokens(sentence)
        if used + tokens > budget:
            break
        tail.insert(0, sentence.strip())
        used += tokens
    if tail:
        return " ".join(tail)
    starts = [m.start() for m in TOKEN.finditer(unit.text)]
    return unit.text[starts[-budget]:].strip() if len(starts) > budget else unit.text.strip()


def _merge_tiny(drafts: list[_Draft], min_tokens: int) -> list[_Draft]:
    """A tiny trailing piece joins the piece before it; a tiny section start, the one after."""
    merged: list[_Draft] = []
    for draft in drafts:
        if merged and draft.continued and draft.tokens < min_tokens:
            merged[-1].units.extend(draft.units)  # its overlap is already in the previous piece
        else:
            merged.append(draft)
    result: list[_Draft] = []
    carry: _Draft | None = None
    for draft in merged:
        if carry is not None:
            draft = _Draft(carry.units + draft.units, continued=carry.continued)
            carry = None
        if draft.tokens < min_tokens and not draft.continued:
            carry = draft
        else:
            result.append(draft)
    if carry is not None:
        if result:
            result[-1].units.extend(carry.units)
        else:
            result.append(carry)
    return result


def _section_label(units: list[_Unit], title: str) -> str:
    """The heading path the units share, then the sections they span below it ("A / B")."""
    key = title.strip().casefold()
    # Headings only open sections; the content under them says which sections a chunk holds.
    content = [u for u in units if u.kind != "heading"] or units
    paths = [u.path[1:] if u.path and u.path[0].casefold() == key else u.path for u in content]
    common = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] == path[n]:
            n += 1
        common = common[:n]
    below = list(dict.fromkeys(p[len(common)] for p in paths if len(p) > len(common)))
    return " > ".join([*common, " / ".join(below)] if below else common)


def _render(index: int, draft: _Draft, title: str) -> TextChunk:
    text = draft.overlap
    for unit in draft.units:
        text += (unit.sep if text else "") + unit.text
    text = text.strip()
    return TextChunk(index, text, _section_label(draft.units, title), count_tokens(text))
