"""Answer text (Markdown from the model) to Slack mrkdwn or safe stream Markdown; splitting."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rag.citations import CODE_SPAN
from rag.markdown import CITATION, Token, parse

ZWSP = "\u200b"
_FENCE = "```"
# Spelled-out broadcasts only ping with link_names, which Sift never sets; defused anyway.
_LOUD = re.compile(r"(?<![\w@])@(channel|here|everyone)\b", re.IGNORECASE)
# In stream Markdown, keep `<!channel>`, `<@U1>`, `<#C1>` and `<!subteam^S1>` from parsing.
_MARKUP_OPEN = re.compile(r"<(?=[!@#])")
_URL = re.compile(r"https?://[^\s]+", re.IGNORECASE)


def escape(text: str) -> str:
    """Slack's three control characters, `&` first; neutralises any `<!here>`-style markup."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _LOUD.sub(lambda m: f"@{ZWSP}{m.group(1)}", text)


def safe_url(url: str) -> str | None:
    """An http(s) URL made safe inside `<url|label>`; None for anything else."""
    url = url.strip()
    if not _URL.fullmatch(url):
        return None
    return (url.replace("&", "&amp;").replace("<", "%3C").replace(">", "%3E")
            .replace("|", "%7C"))


def link(url: str, label: str) -> str:
    safe = safe_url(url)
    return f"<{safe}|{escape(label)}>" if safe else escape(label)


class _Mrkdwn:
    """Walks the parser's tokens (rag/markdown.py) and writes Slack mrkdwn: bold `*`, italic
    `_`, strike `~`, links `<url|label>` (http(s) only), bullets `•`, quotes `>`, code as
    code, and tables as a code block of aligned columns (mrkdwn has no tables)."""

    def __init__(self, links: Mapping[int, str]) -> None:
        self.links = links

    def blocks(self, tokens: list[Token]) -> str:
        out: list[str] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            end = _closing(tokens, i)
            inner = tokens[i + 1:end]
            if token.type == "heading_open":
                out.append(f"*{self.inline(inner)}*")
            elif token.type == "paragraph_open":
                out.append(self.inline(inner))
            elif token.type in ("fence", "code_block"):
                out.append(f"{_FENCE}\n{escape(token.content)}{_FENCE}")
            elif token.type == "blockquote_open":
                out.append("\n".join(">" + line for line in self.blocks(inner).split("\n")))
            elif token.type in ("bullet_list_open", "ordered_list_open"):
                out.append(self.items(inner, ordered=token.type == "ordered_list_open",
                                      start=int(token.attrGet("start") or 1)))
            elif token.type == "table_open":
                out.append(self.table(inner))
            elif token.type == "hr":
                out.append("———")
            i = end + 1
        return "\n\n".join(part for part in out if part)

    def items(self, tokens: list[Token], *, ordered: bool, start: int) -> str:
        lines: list[str] = []
        i, n = 0, start
        while i < len(tokens):
            end = _closing(tokens, i)
            body = self.blocks(tokens[i + 1:end]).replace("\n\n", "\n")
            mark = f"{n}." if ordered else "•"
            first, *rest = body.split("\n") or [""]
            lines.append(f"{mark} {first}")
            lines += [f"  {line}" for line in rest]
            i, n = end + 1, n + 1
        return "\n".join(lines)

    def table(self, tokens: list[Token]) -> str:
        rows: list[list[str]] = []
        for token in tokens:
            if token.type == "tr_open":
                rows.append([])
            elif token.type == "inline" and rows:
                rows[-1].append(_plain(token.children or []))
        widths = [max((len(r[c]) for r in rows if c < len(r)), default=0)
                  for c in range(max(map(len, rows), default=0))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)).rstrip()
                 for r in rows]
        return f"{_FENCE}\n{escape(chr(10).join(lines))}\n{_FENCE}"

    def inline(self, tokens: list[Token]) -> str:
        parts: list[str] = []
        labels: list[tuple[str, int]] = []  # an open link: its URL, where its label starts
        for token in (c for t in tokens if t.type == "inline" for c in t.children or []):
            kind = token.type
            if kind == "text":
                parts.append(escape(token.content))
            elif kind == "code_inline":
                parts.append(f"`{escape(token.content)}`")
            elif kind in ("softbreak", "hardbreak"):
                parts.append("\n")
            elif kind in _MARKS:
                parts.append(_MARKS[kind])
            elif kind == CITATION:
                url = self.links.get(token.meta["n"])
                parts.append(link(url, token.content) if url else escape(token.content))
            elif kind == "link_open":
                labels.append((str(token.attrGet("href") or ""), len(parts)))
            elif kind == "link_close" and labels:
                url, at = labels.pop()
                label, parts[at:] = "".join(parts[at:]), []
                safe = safe_url(url)
                parts.append(f"<{safe}|{label}>" if safe and label else label)
            elif kind == "image":
                parts.append(escape(_plain(token.children or [])))
        return "".join(parts)


_MARKS = {"strong_open": "*", "strong_close": "*", "em_open": "_", "em_close": "_",
          "s_open": "~", "s_close": "~"}


def _closing(tokens: list[Token], i: int) -> int:
    """The index of the token that closes the one at `i` (itself when it opens nothing)."""
    depth, j = int(tokens[i].nesting), i
    while depth > 0:
        j += 1
        depth += tokens[j].nesting
    return j


def _plain(children: list[Token]) -> str:
    return "".join(c.content for c in children if c.type in ("text", "code_inline", CITATION))


def to_mrkdwn(text: str, links: Mapping[int, str]) -> str:
    """Markdown to mrkdwn; `[n]` becomes a link to source n when `links` has its URL."""
    return _Mrkdwn(links).blocks(parse(text))


def defuse(text: str) -> str:
    """For Markdown that Slack renders itself: no mention or broadcast markup survives."""
    text = _MARKUP_OPEN.sub("<" + ZWSP, text)
    return _LOUD.sub(lambda m: f"@{ZWSP}{m.group(1)}", text)


def _outside_code(text: str) -> list[tuple[str, bool]]:
    """The text in pieces, each marked as code or not. The stream is Markdown that Slack
    renders itself, so it is rewritten in place (citations linked, markup defused) rather
    than rendered; the parser gives no source offsets for inline code."""
    parts, last = [], 0
    for m in CODE_SPAN.finditer(text):
        parts += [(text[last:m.start()], False), (m.group(0), True)]
        last = m.end()
    parts.append((text[last:], False))
    return parts


def to_markdown(text: str, links: Mapping[int, str]) -> str:
    """Markdown for a stream: citations as Markdown links, markup defused."""
    def cite(m: re.Match[str]) -> str:
        url = links.get(int(m.group(1)))
        return f"[[{m.group(1)}]]({url})" if url and safe_url(url) else m.group(0)

    out = []
    for part, code in _outside_code(text):
        out.append(defuse(part) if code else re.sub(r"\[(\d+)\](?!\()", cite, defuse(part)))
    return "".join(out)


def _cut_point(text: str, limit: int) -> int:
    window = text[:limit]
    cut = limit
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        if at > limit // 3:
            cut = at
            break
    opened, closed = window.rfind("<", 0, cut), window.rfind(">", 0, cut)
    if opened > closed and opened > 0:  # never inside a <url|label> token
        cut = opened
    amp, semi = window.rfind("&", 0, cut), window.rfind(";", 0, cut)
    if amp > semi and cut - amp < 6 and amp > 0:  # never inside &amp; &lt; &gt;
        cut = amp
    return cut


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut at paragraphs, lines or spaces, never inside
    a link or an entity; a code block cut in two is closed and reopened."""
    pieces: list[str] = []
    rest = text.strip()
    room = limit - len(_FENCE) - 1
    while len(rest) > limit:
        cut = _cut_point(rest, room)
        head, rest = rest[:cut].rstrip(), rest[cut:].strip()
        if head.count(_FENCE) % 2:
            head, rest = f"{head}\n{_FENCE}", f"{_FENCE}\n{rest}"
        if head:
            pieces.append(head)
    if rest:
        pieces.append(rest)
    return pieces
