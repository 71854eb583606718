"""Office files become Markdown through the one file converter; headings and tables survive."""

from __future__ import annotations

import base64
import io
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
from openpyxl import Workbook
from pptx import Presentation
from pptx.util import Inches

from sync.connectors.base import DocumentFailure, SourceDocument
from sync.connectors.common.convert import DocumentParseError
from sync.connectors.common.files import file_to_markdown
from sync.connectors.folder import FolderConnector
from tests.sync.conftest import write

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
PIC = "http://schemas.openxmlformats.org/drawingml/2006/picture"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
                       "DwAEhQGAhKmMIQAAAABJRU5ErkJggg==")  # one transparent pixel


def xlsx() -> bytes:
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Prices"
    for row in (("Plan", "Monthly"), ("Starter", 10), ("Team", 45)):
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def picture(alt: str) -> str:
    """A paragraph holding the document's one image (rId2), described by `alt` if not empty."""
    return ('<w:p><w:r><w:drawing><wp:inline><wp:extent cx="9525" cy="9525"/><wp:docPr id="1"'
            f' name="Picture 1" descr="{alt}"/><a:graphic><a:graphicData uri="{PIC}"><pic:pic>'
            '<pic:blipFill><a:blip r:embed="rId2"/></pic:blipFill></pic:pic></a:graphicData>'
            "</a:graphic></wp:inline></w:drawing></w:r></w:p>")


def docx(paragraphs: list[str], *, heading: str = "", table: list[list[str]] | None = None,
         title: str = "", pictures: tuple[str, ...] = ()) -> bytes:
    """A small Word document: an optional "heading 1" paragraph, paragraphs, an optional table,
    pictures of a 1x1 PNG with these descriptions, and an optional title in its properties."""
    def para(text: str, style: str = "") -> str:
        props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        return f"<w:p>{props}<w:r><w:t>{text}</w:t></w:r></w:p>"
    body = (para(heading, "Heading1") if heading else "") + "".join(map(para, paragraphs))
    body += "".join(map(picture, pictures))
    if table:
        body += "<w:tbl>" + "".join(
            "<w:tr>" + "".join(f"<w:tc>{para(c)}</w:tc>" for c in row) + "</w:tr>"
            for row in table) + "</w:tbl>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/content-types"><Default Extension="rels" '
                   'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                   '<Default Extension="xml" ContentType="application/xml"/><Default '
                   'Extension="png" ContentType="image/png"/><Override '
                   'PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
                   'officedocument.wordprocessingml.document.main+xml"/></Types>')
        z.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
                   'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                   'officeDocument" Target="word/document.xml"/></Relationships>')
        z.writestr("word/_rels/document.xml.rels", '<?xml version="1.0"?><Relationships xmlns="'
                   'http://schemas.openxmlformats.org/package/2006/relationships"><Relationship '
                   'Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                   'relationships/styles" Target="styles.xml"/><Relationship Id="rId2" '
                   'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                   'image" Target="media/image1.png"/></Relationships>')
        z.writestr("word/media/image1.png", PNG)
        z.writestr("word/styles.xml", f'<?xml version="1.0"?><w:styles xmlns:w="{W}"><w:style '
                   'w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/>'
                   "</w:style></w:styles>")
        z.writestr("word/document.xml", f'<?xml version="1.0"?><w:document xmlns:w="{W}" '
                   f'xmlns:wp="{WP}" xmlns:a="{A}" xmlns:pic="{PIC}" xmlns:r="{R}">'
                   f"<w:body>{body}</w:body></w:document>")
        if title:
            z.writestr("docProps/core.xml", '<?xml version="1.0"?><cp:coreProperties xmlns:cp='
                       '"http://schemas.openxmlformats.org/package/2006/metadata/core-properties"'
                       f' xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}'
                       "</dc:title></cp:coreProperties>")
    return out.getvalue()


def pptx() -> bytes:
    """Two slides: a title with an outline and a table and speaker notes; then a slide with no
    title whose only text sits in a group."""
    deck = Presentation()
    deck.core_properties.title = "Credentials runbook"
    first = deck.slides.add_slide(deck.slide_layouts[1])
    assert first.shapes.title is not None
    first.shapes.title.text = "Rotating credentials"
    outline = first.placeholders[1].text_frame
    outline.text = "Open the vault"
    step = outline.add_paragraph()
    step.text, step.level = "Choose the staging database", 1
    table = first.shapes.add_table(2, 2, Inches(1), Inches(5), Inches(4), Inches(1)).table
    for (r, c), text in {(0, 0): "Env", (0, 1): "Owner", (1, 0): "staging",
                         (1, 1): "ops | infra"}.items():
        table.cell(r, c).text = text
    first.notes_slide.notes_text_frame.text = "Rotation every 90 days is the audit rule."
    second = deck.slides.add_slide(deck.slide_layouts[6])
    box = second.shapes.add_group_shape().shapes.add_textbox(
        Inches(1), Inches(1), Inches(3), Inches(1))
    box.text_frame.text = "Ask #ops when the vault is sealed."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def test_a_spreadsheet_becomes_a_markdown_table() -> None:
    body = file_to_markdown(xlsx(), "prices.xlsx").body
    assert "## Prices" in body
    assert "| Plan | Monthly |" in body and "| Starter | 10 |" in body


def test_a_word_document_keeps_its_paragraphs() -> None:
    body = file_to_markdown(docx(["Expenses are filed monthly.", "Receipts are kept."]),
                            "policy.docx").body
    assert "Expenses are filed monthly." in body and "Receipts are kept." in body


def test_a_word_document_keeps_headings_tables_and_its_title() -> None:
    parsed = file_to_markdown(docx(["Claims are filed monthly."], heading="Expenses",
                                   table=[["Item", "Limit"], ["Hotel", "200"]],
                                   title="Expense policy"), "policy.docx")
    lines = parsed.body.splitlines()
    assert lines[0] == "# Expenses"
    # The table's first row is its header, not an empty row above it.
    assert "| Item | Limit |\n| --- | --- |\n| Hotel | 200 |" in parsed.body
    assert parsed.meta == {"title": "Expense policy"}


def test_pictures_leave_their_description_not_their_bytes() -> None:
    body = file_to_markdown(docx(["The network:"], pictures=("Diagram of the VPN", "")),
                            "network.docx").body
    assert body.splitlines() == ["The network:", "", "[image: Diagram of the VPN]"]


def test_a_presentation_becomes_a_section_per_slide() -> None:
    parsed = file_to_markdown(pptx(), "runbook.pptx")
    expected = [
        "## Rotating credentials", "", "Open the vault", "- Choose the staging database", "",
        "| Env | Owner |", "| --- | --- |", "| staging | ops \\| infra |", "",
        "Notes: Rotation every 90 days is the audit rule.", "",
        "## Slide 2", "", "Ask #ops when the vault is sealed."]
    assert parsed.body.splitlines() == expected
    assert parsed.meta == {"title": "Credentials runbook"}


def test_every_worksheet_becomes_a_table_of_shown_values() -> None:
    book = Workbook()
    first = book.active
    assert first is not None
    first.title = "Limits"
    first.append(["Item", "Limit", None, None])
    first.append([])  # blank rows and trailing blank columns are not cells anyone wrote
    first.append(["Hotel", 200.0])
    first.append(["Meal", 35.5, datetime(2026, 3, 1)])
    book.create_sheet("Scratch")  # an empty sheet adds nothing
    book.create_sheet("Owners").append(["Team", "Finance"])
    out = io.BytesIO()
    book.save(out)
    parsed = file_to_markdown(out.getvalue(), "limits.xlsx")
    assert parsed.body.splitlines() == [
        "## Limits", "", "| Item | Limit |  |", "| --- | --- | --- |", "| Hotel | 200 |  |",
        "| Meal | 35.5 | 2026-03-01 |", "", "## Owners", "", "| Team | Finance |",
        "| --- | --- |"]
    assert parsed.meta == {}


def test_an_empty_workbook_is_a_parse_error() -> None:
    out = io.BytesIO()
    Workbook().save(out)
    with pytest.raises(DocumentParseError, match=r"the \.xlsx file has no text"):
        file_to_markdown(out.getvalue(), "empty.xlsx")


@pytest.mark.parametrize("name", ["broken.docx", "broken.pptx", "broken.xlsx"])
def test_a_zip_that_is_no_office_file_is_a_parse_error(name: str) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("notes.txt", "not an Office package")
    suffix = name[name.index("."):]
    with pytest.raises(DocumentParseError, match=f"not a readable \\{suffix} file: "):
        file_to_markdown(out.getvalue(), name)


def test_an_unknown_extension_is_named() -> None:
    with pytest.raises(DocumentParseError, match=r"diagram\.vsdx: unsupported file type .vsdx"):
        file_to_markdown(b"PK", "diagram.vsdx")


def test_a_corrupt_office_file_is_a_parse_error() -> None:
    with pytest.raises(DocumentParseError):
        file_to_markdown(b"PK\x03\x04 not really a zip", "broken.docx")


async def test_the_folder_connector_reads_office_files(kb: Path) -> None:
    write(kb, "finance/prices.xlsx", xlsx())
    write(kb, "finance/broken.pptx", b"garbage")
    items = {i.doc_id: i async for i in FolderConnector(kb).documents(None)}
    prices = items["finance/prices.xlsx"]
    assert isinstance(prices, SourceDocument) and "| Team | 45 |" in prices.body
    assert isinstance(items["finance/broken.pptx"], DocumentFailure)
