"""Markdown as the plain text the embedding model reads: the words, not the syntax (pure)."""

from __future__ import annotations

from rag.markdown import Token, parse

# Inline tokens whose words are the text: a link or image keeps its words and drops its
# address, which costs many word pieces and says nothing a sentence vector uses (on the AWS
# pages links were 12% of what was embedded); marks of emphasis are syntax.
_WORDS = {"text", "code_inline", "citation"}
_BREAKS = {"softbreak", "hardbreak"}
_CELLS = {"th_open", "td_open"}


def plain_text(markdown: str) -> str:
    """`markdown` without link addresses, backslash escapes, emphasis marks, heading marks,
    list markers, table rules and backticks. Code, fenced or inline, is kept as written
    (`s3:*` keeps its star), a fence's info string ("json") too; a table row is its cells."""
    lines: list[str] = []
    row: list[str] | None = None  # the cells of the table row being read
    for token in parse(markdown):
        if token.type in ("fence", "code_block"):
            lines += [token.info.strip(), token.content.rstrip("\n")]
        elif token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            lines.append(" | ".join(cell for cell in row if cell))
            row = None
        elif token.type == "inline":
            words = _inline(token.children or [])
            if row is not None:
                row.append(words)
            else:
                lines.append(words)
    return "\n".join(line for line in lines if line)


def _inline(children: list[Token]) -> str:
    parts: list[str] = []
    for child in children:
        if child.type in _WORDS:
            parts.append(child.content)
        elif child.type == "image":
            parts.append(_inline(child.children or []))
        elif child.type in _BREAKS:
            parts.append("\n")
    return "".join(parts)
