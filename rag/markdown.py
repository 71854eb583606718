"""The one Markdown parser (markdown-it-py): CommonMark with GFM tables and strikethrough, raw
HTML kept as text, and Sift's citation markers `[n]` as tokens of their own."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

__all__ = ["CITATION", "Token", "inline_children", "parse", "parser", "top_level"]

CITATION = "citation"  # a token whose `meta["n"]` is the cited excerpt's number
_MAX_DIGITS = 4


def _citation(state: StateInline, silent: bool) -> bool:
    """`[12]` outside code, not the start of a link (`[12](url)`, `[12][ref]`)."""
    pos, text = state.pos, state.src
    if text[pos] != "[":
        return False
    end = pos + 1
    while end < state.posMax and end - pos <= _MAX_DIGITS and text[end].isdigit():
        end += 1
    if end == pos + 1 or end >= state.posMax or text[end] != "]":
        return False
    if end + 1 < len(text) and text[end + 1] == "(":
        return False  # a link whose label is a number
    if not silent:
        token = state.push(CITATION, "", 0)
        token.content = text[pos:end + 1]
        token.meta = {"n": int(text[pos + 1:end])}
    state.pos = end + 1
    return True


class _Parser(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        # Every link is parsed as a link, whatever its scheme: each renderer decides what may
        # be linked (http(s) only) and shows the rest as its label, not `[label](javascript:…)`.
        return True


@lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    """Built once: the rules are the same for documents, answers and excerpts."""
    md = _Parser("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.inline.ruler.before("link", CITATION, _citation)
    return md


def parse(text: str) -> list[Token]:
    return parser().parse(text)


def inline_children(tokens: list[Token]) -> Iterator[Token]:
    """Every inline token's children, in order (the words of a block, flattened)."""
    for token in tokens:
        if token.type == "inline" and token.children:
            yield from token.children


def top_level(tokens: list[Token]) -> Iterator[tuple[int, list[Token]]]:
    """Each top-level block (a heading, a paragraph, a whole list or table): the index of its
    opening token, and all its tokens."""
    start = 0
    while start < len(tokens):
        end, depth = start, int(tokens[start].nesting)
        while depth > 0:
            end += 1
            depth += tokens[end].nesting
        yield start, tokens[start:end + 1]
        start = end + 1
