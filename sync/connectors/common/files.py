"""A file's bytes as Markdown by its type: HTML, PDF, Word, PowerPoint and Excel."""

from __future__ import annotations

import io
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime, time
from typing import Any

from defusedxml import ElementTree

from sync.connectors.common.convert import (
    DocumentParseError,
    Parsed,
    html_to_markdown,
    markdown_table,
)

_CORE = "docProps/core.xml"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def file_to_markdown(data: bytes, name: str) -> Parsed:
    """A file or attachment as Markdown, chosen by the name's extension; a file that cannot be
    read raises DocumentParseError naming what is wrong with it."""
    suffix = name[name.rfind("."):].lower() if "." in name else ""
    if suffix in (".html", ".htm"):
        return html_to_markdown(data.decode("utf-8", errors="replace"))
    if suffix == ".pdf":
        return pdf_to_markdown(data)
    convert = OFFICE.get(suffix)
    if convert is None:
        raise DocumentParseError(f"{name}: unsupported file type {suffix or '(none)'}")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentParseError(f"not a readable {suffix} file (not an Office zip package)")
    try:
        body = convert(data).strip()
    except Exception as exc:  # each format's library raises its own kinds of error
        raise DocumentParseError(f"not a readable {suffix} file: {exc}") from exc
    if not body:
        raise DocumentParseError(f"the {suffix} file has no text")
    title = _core_title(data)
    return Parsed(body + "\n", {"title": title} if title else {})


# PDFs often store "ffi" or "fl" as one ligature glyph, which pypdf returns as such: "oﬃces"
# would be quoted as is and never match a search for "offices". Unicode's own decomposition.
LIGATURES = {code: unicodedata.normalize("NFKC", chr(code)) for code in range(0xFB00, 0xFB07)}


def pdf_to_markdown(data: bytes) -> Parsed:
    """Extract the text of a PDF page by page; the PDF's own Title becomes metadata."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
    except (PyPdfError, ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
        raise DocumentParseError(f"not a readable PDF: {exc}") from exc
    text = "\n\n".join(p for p in pages if p).translate(LIGATURES)
    if not text:
        raise DocumentParseError("the PDF has no extractable text (scanned images?)")
    title = str(info.title).strip() if info is not None and info.title else ""
    return Parsed(text + "\n", {"title": title} if title else {})


def docx_to_markdown(data: bytes) -> str:
    """Word: mammoth maps the document's styles to HTML (headings, lists, tables), which then
    takes the same road to Markdown as any web page."""
    import mammoth  # imported on first use: most syncs never see a Word file

    html = mammoth.convert_to_html(io.BytesIO(data), convert_image=_image_as_alt_text).value
    return html_to_markdown(html).body


def _image_as_alt_text(image: Any) -> list[Any]:
    """A picture becomes its description, if it has one: mammoth's default would inline the
    picture as base64, megabytes of noise in every chunk around it."""
    from mammoth import html

    return [html.text(f"[image: {_one_line(image.alt_text)}]")] if image.alt_text else []


def pptx_to_markdown(data: bytes) -> str:
    """PowerPoint: a section per slide under its title, its text boxes top to bottom, tables as
    Markdown tables, and the speaker notes (often where the explanation is)."""
    from pptx import Presentation

    sections = []
    for number, slide in enumerate(Presentation(io.BytesIO(data)).slides, start=1):
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text.strip() if title_shape is not None else ""
        parts = [f"## {_one_line(title) or f'Slide {number}'}"]
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if shape.has_text_frame and shape.text_frame.text.strip():
                parts.append(_paragraphs(shape.text_frame))
            elif getattr(shape, "has_table", False):
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                parts.append(markdown_table(rows))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                parts.append("Notes: " + _paragraphs(notes))
        sections.append("\n\n".join(parts))
    return "\n\n".join(sections)


def xlsx_to_markdown(data: bytes) -> str:
    """Excel: a section per worksheet under its name, its cells (values, not formulas) as a
    Markdown table whose first non-empty row is the header."""
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        sections = []
        for sheet in book.worksheets:
            rows = [[_cell(v) for v in row] for row in sheet.iter_rows(values_only=True)]
            rows = [row for row in rows if any(row)]
            if rows:
                width = max(max((i + 1 for i, c in enumerate(r) if c), default=0) for r in rows)
                table = markdown_table([r[:width] for r in rows])
                sections.append(f"## {_one_line(sheet.title)}\n\n{table}")
        return "\n\n".join(sections)
    finally:
        book.close()  # read-only workbooks keep the archive open until closed


OFFICE: dict[str, Callable[[bytes], str]] = {
    ".docx": docx_to_markdown, ".pptx": pptx_to_markdown, ".xlsx": xlsx_to_markdown}


def _core_title(data: bytes) -> str:
    """The title every Office package may declare in its core properties (File > Info)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            root = ElementTree.fromstring(package.read(_CORE))
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, ValueError):
        return ""
    node = root.find(_DC_TITLE)
    return _one_line(node.text or "") if node is not None else ""


def _reading_order(shapes: Iterable[Any]) -> Iterator[Any]:
    """Shapes top to bottom, then left to right, with groups opened; a placeholder that
    inherits its position from the layout has none of its own and comes first."""
    flat: list[Any] = []

    def walk(group: Iterable[Any]) -> None:
        for shape in group:
            if hasattr(shape, "shapes"):  # a group shape
                walk(shape.shapes)
            else:
                flat.append(shape)
    walk(shapes)
    yield from sorted(flat, key=lambda s: (s.top or 0, s.left or 0))


def _paragraphs(frame: Any) -> str:
    """A text frame's paragraphs, one per line; indented ones (outline levels) as list items."""
    lines = []
    for paragraph in frame.paragraphs:
        text = _one_line(paragraph.text)
        if text:
            lines.append(f"{'  ' * (paragraph.level - 1)}- {text}" if paragraph.level else text)
    return "\n".join(lines)


def _cell(value: Any) -> str:
    """A cell's value as shown: whole floats without '.0', dates in ISO form, empty as ''."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime) and value.time() == time(0):
        return value.date().isoformat()
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value).strip()


def _one_line(text: str) -> str:
    return " ".join(text.split())
