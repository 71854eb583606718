"""Text and platform fields as Markdown and typed metadata (front matter, HTML, tables)."""

from __future__ import annotations

import csv
import difflib
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import yaml
from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

from sync.connectors.base import SourceDocument

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_NOISE_TAGS = ("script", "style", "noscript", "template", "head")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)


class DocumentParseError(ValueError):
    """The document cannot be read (invalid front matter, unparseable PDF); skip and report it."""


@dataclass(frozen=True)
class Parsed:
    """A body converted to Markdown plus the metadata the file itself declared."""

    body: str
    meta: Mapping[str, Any]


def split_front_matter(text: str) -> Parsed:
    """Separate a leading YAML front matter block from a Markdown body."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return Parsed(text, {})
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        raise DocumentParseError(f"invalid YAML front matter{line}: "
                                 f"{getattr(exc, 'problem', None) or exc}") from exc
    if not isinstance(meta, dict):
        raise DocumentParseError("front matter is not a mapping of keys to values")
    return Parsed(text[match.end():], meta)


def html_to_markdown(html: str) -> Parsed:
    """Convert an HTML page to Markdown; `<title>` and `<meta name=...>` become metadata."""
    soup = BeautifulSoup(html, "html.parser")
    meta: dict[str, Any] = {}
    if soup.title and soup.title.string:
        meta["title"] = soup.title.string.strip()
    for tag in soup.find_all("meta"):
        name, content = tag.get("name"), tag.get("content")
        if isinstance(name, str) and isinstance(content, str):
            meta.setdefault(name.strip().lower(), content.strip())
    for tag in soup.find_all(_NOISE_TAGS):
        tag.decompose()
    converter = MarkdownConverter(heading_style="ATX", bullets="-", code_language="",
                                  table_infer_header=True,  # a first row, not an empty one
                                  code_language_callback=_code_language)
    body = converter.convert_soup(soup)
    return Parsed(re.sub(r"\n{3,}", "\n\n", body).strip() + "\n", meta)


def _code_language(pre: Any) -> str:
    """`<pre><code class="language-x">` (Confluence, most site generators) fences as x."""
    code = pre.find("code")
    for name in (code.get("class") or []) if code is not None else []:
        if str(name).startswith("language-"):
            return str(name)[len("language-"):]
    return ""


def csv_to_markdown(text: str) -> Parsed:
    """A CSV table (a spreadsheet's export) as a Markdown table, its first row the header."""
    rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    if not rows:
        raise DocumentParseError("the spreadsheet has no cells")
    return Parsed(markdown_table(rows) + "\n", {})


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cells as a Markdown table, the first row its header; short rows are padded."""
    width = max(len(r) for r in rows)

    def line(row: list[str]) -> str:
        cells = [c.replace("|", "\\|").replace("\n", " ").strip() for c in row]
        return "| " + " | ".join(cells + [""] * (width - len(cells))) + " |"
    return "\n".join([line(rows[0]), "|" + " --- |" * width, *(line(r) for r in rows[1:])])


def first_heading(body: str) -> str:
    match = _H1.search(body)
    return match.group(1).strip() if match else ""


def as_tuple(value: Any) -> tuple[str, ...]:
    """Lists stay lists; a comma-separated string ("a, b") becomes its parts."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, list | tuple | set):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return (str(value),)


def as_datetime(value: Any, key: str = "date") -> datetime | None:
    """Dates and ISO-8601 strings (a trailing Z included) as aware UTC datetimes."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    else:
        try:
            parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise DocumentParseError(f"{key} {value!r} is not an ISO-8601 date") from exc
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _near_access(key: str) -> bool:
    """`Access`, `acess`, `accesss`, `access_groups`: someone meant `access` and must be told."""
    folded = key.strip().casefold().replace("-", "_")
    return key != "access" and (folded.startswith("access_") or
                                difflib.SequenceMatcher(None, folded, "access").ratio() >= 0.8)


def read_access(meta: Mapping[str, Any], default: tuple[str, ...],
                where: str = "front matter") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A document's access groups and what is wrong with them; fails closed.

    A missing `access` means `default`. An empty or null one, or a key that looks like a
    misspelt `access`, restricts the document to nobody (`()`) until fixed, and says why.
    """
    near = sorted(str(k) for k in meta if _near_access(str(k)))
    if near:
        return (), (f"{where} has {', '.join(repr(k) for k in near)}: did you mean 'access'? "
                    "The document is visible to nobody until fixed",)
    if "access" not in meta:
        return default, ()
    groups = as_tuple(meta["access"])
    if not groups:
        return (), (f"{where} has an empty 'access' ({meta['access']!r}): the document is "
                    "visible to nobody until it names its groups (or 'public')",)
    return groups, ()


def build_document(doc_id: str, parsed: Parsed, *, title: str = "", url: str = "",
                   updated_at: datetime | None = None,
                   default_access: tuple[str, ...] = ("public",)) -> SourceDocument:
    """A SourceDocument from a body and its metadata; arguments are fallbacks for missing keys."""
    meta = parsed.meta
    access, warnings = read_access(meta, default_access)
    return SourceDocument(
        doc_id=_text(meta.get("doc_id")) or doc_id,
        title=_text(meta.get("title")) or first_heading(parsed.body) or title or doc_id,
        body=parsed.body,
        url=_text(meta.get("url")) or url,
        tags=as_tuple(meta.get("tags")),
        authors=as_tuple(meta.get("authors") or meta.get("author")),
        channels=as_tuple(meta.get("channels")),
        doc_type=_text(meta.get("doc_type")),
        subtype=_text(meta.get("subtype")),
        language=_text(meta.get("language")),
        published_at=as_datetime(meta.get("published_at"), "published_at"),
        updated_at=as_datetime(meta.get("updated_at"), "updated_at") or updated_at,
        access=access,
        warnings=warnings,
    )


def decode_text(data: bytes) -> str:
    """A text file's characters: UTF-8 (with or without its BOM) as nearly every file is, else
    the encoding charset-normalizer finds (a Latin-1 or Windows-1252 export of an old wiki)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        from charset_normalizer import from_bytes  # only for the rare file that needs it

        found = from_bytes(data)
        best = found.best()
        if best is None:
            raise DocumentParseError(f"not UTF-8 text (byte {exc.start}), and no other "
                                     "text encoding fits it") from exc
        # Several code pages often fit a short text equally well (Portuguese reads the same
        # in cp1250 and cp1252 but for ã and õ): among the equals, the Western European ones
        # that most such files are written in come first.
        equals = [m for m in found if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
        chosen = next((m for m in equals if m.encoding in _WESTERN), best)
        return str(chosen)


_WESTERN = ("cp1252", "latin_1", "iso8859_15")
