"""An Answer as a small, safe HTML fragment: escaped text, citations linked, sources, notes."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

from bot.render.notes import answer_notes, error_text
from rag import messages
from rag.citations import CODE_SPAN
from rag.types import Answer, AnswerStatus, Citation

_SAFE_URL = re.compile(r"^https?://[^\s\"'<>]+$", re.IGNORECASE)
_INLINE = re.compile(r"\[(?P<cite>\d+)\]|\*\*(?P<bold>[^*\n]+?)\*\*")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")


def safe_url(url: str) -> str | None:
    """An http(s) address fit for an href; anything else (javascript:, data:) is None."""
    url = url.strip()
    return html.escape(url, quote=True) if _SAFE_URL.match(url) else None


def _inline(text: str, links: Mapping[int, str]) -> str:
    out, last = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[last:m.start()]))
        if m["cite"] is not None:
            url = links.get(int(m["cite"]))
            label = html.escape(m[0])
            out.append(f'<a class="cite" href="{url}" rel="noopener noreferrer" '
                       f'target="_blank">{label}</a>' if url else label)
        else:
            out.append(f"<strong>{html.escape(m['bold'])}</strong>")
        last = m.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def _block(block: str, links: Mapping[int, str]) -> str:
    lines = [ln for ln in block.splitlines() if ln.strip()]
    if lines and all(_BULLET.match(ln) for ln in lines):
        items = "".join(f"<li>{_inline(_BULLET.sub('', ln), links)}</li>" for ln in lines)
        return f"<ul>{items}</ul>"
    if lines and all(ln.lstrip().startswith(">") for ln in lines):
        quoted = "<br>".join(_inline(ln.lstrip()[1:].strip(), links) for ln in lines)
        return f"<blockquote>{quoted}</blockquote>"
    if len(lines) == 1 and _HEADING.match(lines[0]):
        return f"<p><strong>{_inline(_HEADING.sub('', lines[0]), links)}</strong></p>"
    return "<p>" + "<br>".join(_inline(ln, links) for ln in lines) + "</p>"


def to_html(text: str, links: Mapping[int, str]) -> str:
    """Markdown-ish answer text to HTML; code stays code, everything else is escaped.

    Code is set aside behind placeholders first, so that inline code inside a quote or a
    list item stays in its line, and fenced blocks become blocks of their own."""
    codes: list[str] = []

    def aside(m: re.Match[str]) -> str:
        raw = m.group(0)
        if raw.startswith("```"):
            body = raw.strip("`")
            body = body.split("\n", 1)[1] if "\n" in body else body
            codes.append(f"<pre><code>{html.escape(body.rstrip())}</code></pre>")
            return f"\n\n\x00{len(codes) - 1}\x00\n\n"
        codes.append(f"<code>{html.escape(raw.strip('`'))}</code>")
        return f"\x00{len(codes) - 1}\x00"

    prose = _prose(CODE_SPAN.sub(aside, text.replace("\x00", "")), links)
    prose = re.sub(r"<p>(\x00\d+\x00)</p>", lambda m: m.group(1), prose)
    return re.sub(r"\x00(\d+)\x00", lambda m: codes[int(m.group(1))], prose)


def _prose(text: str, links: Mapping[int, str]) -> str:
    return "".join(_block(b, links) for b in re.split(r"\n\s*\n", text) if b.strip())


def _citation_links(citations: tuple[Citation, ...]) -> dict[int, str]:
    return {c.n: url for c in citations if (url := safe_url(c.url))}


def _source(c: Citation) -> str:
    url, title = safe_url(c.url), html.escape(c.title)
    shown = f'<a href="{url}" rel="noopener noreferrer" target="_blank">{title}</a>' if url \
        else title
    return f"<li>[{c.n}] {shown}</li>"


def render_answer(answer: Answer) -> str:
    if answer.status is AnswerStatus.ERROR:
        return f'<p class="error">{html.escape(error_text(answer))}</p>'
    parts = [to_html(answer.text, _citation_links(answer.citations))]
    if answer.status is AnswerStatus.NO_ANSWER and answer.suggestions:
        parts.append(f"<p>{html.escape(messages.NO_ANSWER_SUGGESTIONS)}</p><ul>"
                     + "".join(_source(c) for c in answer.suggestions) + "</ul>")
    if answer.citations:
        parts.append(f'<div class="sources"><strong>{html.escape(messages.SOURCES_HEADING)}'
                     "</strong><ul>" + "".join(_source(c) for c in answer.citations)
                     + "</ul></div>")
    parts += [f'<p class="note">{html.escape(n)}</p>' for n in answer_notes(answer)]
    return "".join(parts)
