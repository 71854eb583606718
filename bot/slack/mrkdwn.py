"""Answer text (Markdown from the model) to Slack mrkdwn or safe stream Markdown; splitting."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rag.citations import CODE_SPAN

ZWSP = "\u200b"
_FENCE = "```"
_INLINE = re.compile(
    r"\[(?P<label>[^\]\n]+)\]\((?P<url>[^)\s]+)\)"  # [label](url)
    r"|\[(?P<cite>\d+)\]"  # a citation marker [n]
    r"|\*\*(?P<bold>[^*\n]+?)\*\*"
    r"|__(?P<under>[^_\n]+?)__"
    r"|(?<![*\w])\*(?P<em>[^*\s][^*\n]*?)\*(?![*\w])"
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(?P<indent>\s*)[-*+]\s+")
_QUOTE = re.compile(r"^\s{0,3}>[ \t]?")
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


def _inline(line: str, links: Mapping[int, str]) -> str:
    out, last = [], 0
    for m in _INLINE.finditer(line):
        out.append(escape(line[last:m.start()]))
        if m["cite"] is not None:
            url = links.get(int(m["cite"]))
            out.append(link(url, m[0]) if url else escape(m[0]))
        elif m["label"] is not None:
            out.append(link(m["url"], m["label"]))
        elif m["bold"] is not None:
            out.append(f"*{escape(m['bold'])}*")
        else:
            out.append(f"_{escape(m['under'] or m['em'])}_")
        last = m.end()
    out.append(escape(line[last:]))
    return "".join(out)


def _line(line: str, links: Mapping[int, str]) -> str:
    quote = _QUOTE.match(line)
    prefix = ">" if quote else ""  # a raw `>` is the quote marker, not content
    line = line[quote.end():] if quote else line
    heading = _HEADING.match(line)
    if heading:
        return f"{prefix}*{_inline(heading['title'], links)}*"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{prefix}{bullet['indent']}• {_inline(line[bullet.end():], links)}"
    return prefix + _inline(line, links)


def _outside_code(text: str) -> list[tuple[str, bool]]:
    parts, last = [], 0
    for m in CODE_SPAN.finditer(text):
        parts += [(text[last:m.start()], False), (m.group(0), True)]
        last = m.end()
    parts.append((text[last:], False))
    return parts


def to_mrkdwn(text: str, links: Mapping[int, str]) -> str:
    """Markdown to mrkdwn; `[n]` becomes a link to source n when `links` has its URL."""
    out = []
    for part, code in _outside_code(text):
        if code:
            out.append(escape(part))
        else:
            out.append("\n".join(_line(line, links) for line in part.split("\n")))
    return "".join(out)


def defuse(text: str) -> str:
    """For Markdown that Slack renders itself: no mention or broadcast markup survives."""
    text = _MARKUP_OPEN.sub("<" + ZWSP, text)
    return _LOUD.sub(lambda m: f"@{ZWSP}{m.group(1)}", text)


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
