"""Markdown as the plain text the embedding model reads: the words, not the syntax (pure)."""

from __future__ import annotations

import re

from sync.blocks import ESCAPE, FENCE

# A link or image keeps its words and drops its address, which costs many word pieces and
# says nothing a sentence vector uses: on the AWS pages links were 12% of what was embedded.
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_HEADING_MARK = re.compile(r"^ {0,3}#{1,6}[ \t]+")
# Emphasis: runs of * anywhere, runs of _ only at a word's edge (snake_case stays whole).
_EMPHASIS = re.compile(r"\*+|(?<!\w)_+|_+(?!\w)")


def plain_text(markdown: str) -> str:
    """`markdown` without link addresses, backslash escapes, emphasis marks, heading marks and
    backticks. Code, fenced or inline, is kept as written (`s3:*` keeps its star)."""
    lines: list[str] = []
    fence = ""  # the opening fence while inside a fenced block
    for line in markdown.split("\n"):
        marker = FENCE.match(line)
        if marker and (not fence or marker.group(1).startswith(fence)):
            fence = "" if fence else marker.group(1)
            lines.append(line[marker.end():].strip())  # the info string, e.g. "json"
        elif fence:
            lines.append(line)
        else:
            lines.append(_plain_line(line))
    return "\n".join(lines)


def _plain_line(line: str) -> str:
    parts: list[str] = []
    start = 0
    for span in _CODE_SPAN.finditer(line):
        parts += [_prose(line[start:span.start()]), span.group(2)]
        start = span.end()
    parts.append(_prose(line[start:]))
    return _HEADING_MARK.sub("", "".join(parts))


def _prose(text: str) -> str:
    text = _LINK.sub(r"\1", ESCAPE.sub(r"\1", text))
    return _EMPHASIS.sub("", text)
