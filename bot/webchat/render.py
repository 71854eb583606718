"""An Answer as a small, safe HTML fragment: escaped text, citations linked, sources, notes."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from markdown_it.renderer import RendererHTML
from markdown_it.utils import EnvType, OptionsDict

from bot.render.notes import answer_notes, error_text
from rag import messages
from rag.i18n import tr
from rag.markdown import Token, parse, parser
from rag.types import Answer, AnswerStatus, Citation

_SAFE_URL = re.compile(r"^https?://[^\s\"'<>]+$", re.IGNORECASE)


def safe_url(url: str) -> str | None:
    """An http(s) address fit for an href; anything else (javascript:, data:) is None."""
    url = url.strip()
    return html.escape(url, quote=True) if _SAFE_URL.match(url) else None


class _AnswerHTML(RendererHTML):
    """The parser's HTML, made for a chat bubble: raw HTML stays text (the parser's rule),
    links only to http(s) and opened elsewhere, images as their words (nothing is fetched),
    `[n]` linked to its source, headings a few sizes down (an excerpt's `#` is not the page's)."""

    def citation(self, tokens: Sequence[Token], idx: int, options: OptionsDict,
                 env: EnvType) -> str:
        token = tokens[idx]
        url = env["links"].get(token.meta["n"])
        label = html.escape(token.content)
        return (f'<a class="cite" href="{url}" rel="noopener noreferrer" target="_blank">'
                f"{label}</a>") if url else label

    def link_open(self, tokens: Sequence[Token], idx: int, options: OptionsDict,
                  env: EnvType) -> str:
        url = safe_url(str(tokens[idx].attrGet("href") or ""))
        env["open_links"].append(url is not None)
        return f'<a href="{url}" rel="noopener noreferrer" target="_blank">' if url else ""

    def link_close(self, tokens: Sequence[Token], idx: int, options: OptionsDict,
                   env: EnvType) -> str:
        return "</a>" if env["open_links"].pop() else ""

    def image(self, tokens: Sequence[Token], idx: int, options: OptionsDict,
              env: EnvType) -> str:
        return html.escape(self.renderInlineAsText(tokens[idx].children or [], options, env))

    def heading_open(self, tokens: Sequence[Token], idx: int, options: OptionsDict,
                     env: EnvType) -> str:
        return f"<h{min(6, int(tokens[idx].tag[1]) + 2)}>"

    def heading_close(self, tokens: Sequence[Token], idx: int, options: OptionsDict,
                      env: EnvType) -> str:
        return f"</h{min(6, int(tokens[idx].tag[1]) + 2)}>"


_RENDERER = _AnswerHTML()


def to_html(text: str, links: Mapping[int, str]) -> str:
    """Markdown answer text (the model's, or quoted excerpts) as HTML: headings, lists,
    tables, quotes and code as what they are; every character of the text escaped."""
    env: dict[str, Any] = {"links": links, "open_links": []}
    return _RENDERER.render(parse(text.replace("\x00", "")), parser().options, env)


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
        parts.append(f"<p>{html.escape(tr(messages.NO_ANSWER_SUGGESTIONS))}</p><ul>"
                     + "".join(_source(c) for c in answer.suggestions) + "</ul>")
    if answer.citations:
        parts.append(f'<div class="sources"><strong>{html.escape(tr(messages.SOURCES_HEADING))}'
                     "</strong><ul>" + "".join(_source(c) for c in answer.citations)
                     + "</ul></div>")
    parts += [f'<p class="note">{html.escape(n)}</p>' for n in answer_notes(answer)]
    return "".join(parts)
