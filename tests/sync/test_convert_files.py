"""Office files become Markdown through the one file converter; tables stay tables."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from openpyxl import Workbook

from sync.connectors.base import DocumentFailure, SourceDocument
from sync.connectors.convert import DocumentParseError, file_to_markdown
from sync.connectors.folder import FolderConnector
from tests.sync.conftest import write

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


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


def docx(paragraphs: list[str]) -> bytes:
    """The smallest Word document: content types, one relationship, one body."""
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/content-types"><Default Extension="rels" '
                   'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                   '<Default Extension="xml" ContentType="application/xml"/><Override '
                   'PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
                   'officedocument.wordprocessingml.document.main+xml"/></Types>')
        z.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
                   'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                   'officeDocument" Target="word/document.xml"/></Relationships>')
        z.writestr("word/document.xml", f'<?xml version="1.0"?><w:document xmlns:w="{W}">'
                   f"<w:body>{body}</w:body></w:document>")
    return out.getvalue()


def test_a_spreadsheet_becomes_a_markdown_table() -> None:
    body = file_to_markdown(xlsx(), "prices.xlsx").body
    assert "## Prices" in body
    assert "| Plan | Monthly |" in body and "| Starter | 10 |" in body


def test_a_word_document_keeps_its_paragraphs() -> None:
    body = file_to_markdown(docx(["Expenses are filed monthly.", "Receipts are kept."]),
                            "policy.docx").body
    assert "Expenses are filed monthly." in body and "Receipts are kept." in body


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
