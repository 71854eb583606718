"""The folder connector: Markdown with front matter, HTML, text and PDF; failures; checkpoints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.settings import SAMPLE_KNOWLEDGE
from rag.errors import SyncError
from sync.connectors.base import DocumentFailure, Fetched, SourceConfig, SourceDocument
from sync.connectors.folder import FolderConnector
from tests.sync.conftest import article, write
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble
from tests.sync.pdf import make_pdf

HTML = """<!DOCTYPE html><html><head><title>Pricing FAQ</title>
<meta name="tags" content="pricing, plans"><meta name="doc_type" content="faq">
<script>var tracking = 1;</script><style>p {color: red}</style></head>
<body><h1>Pricing FAQ</h1><p>Plans are <b>monthly</b>.</p>
<table><tr><th>Plan</th><th>Price</th></tr><tr><td>Starter</td><td>$10</td></tr></table>
</body></html>"""


async def collect(connector: FolderConnector, since: datetime | None = None) -> list[Fetched]:
    return [item async for item in connector.documents(since)]


def by_id(items: list[Fetched]) -> dict[str, Fetched]:
    return {item.doc_id: item for item in items}


async def test_markdown_front_matter_becomes_metadata(kb: Path) -> None:
    write(kb, "hr/leave.md", article(
        "Parental leave", "# Parental leave\n\nSixteen weeks.", doc_id="hr-leave",
        url="https://wiki/leave", doc_type="policy", subtype="people", tags="[leave, family]",
        authors="[Ana Lima]", channels='["#people"]', language="en",
        published_at="2024-02-01", updated_at="2026-01-15T10:00:00Z", access="[staff, hr]"))
    [doc] = await collect(FolderConnector(kb))
    assert doc == SourceDocument(
        doc_id="hr-leave", title="Parental leave", body="\n# Parental leave\n\nSixteen weeks.",
        url="https://wiki/leave", tags=("leave", "family"), authors=("Ana Lima",),
        channels=("#people",), doc_type="policy", subtype="people", language="en",
        published_at=datetime(2024, 2, 1, tzinfo=UTC),
        updated_at=datetime(2026, 1, 15, 10, tzinfo=UTC), access=("staff", "hr"))


async def test_path_is_the_id_and_title_falls_back(kb: Path) -> None:
    write(kb, "it/vpn-setup.markdown", "# Connecting to the VPN\n\nUse WireGuard.")
    write(kb, "it/no-heading.md", "Just text.")
    write(kb, "notes/printers.txt", "PRINTERS\n\nTray two jams.")
    docs = by_id(await collect(FolderConnector(kb, url_base="https://files/kb/")))
    assert set(docs) == {"it/vpn-setup.markdown", "it/no-heading.md", "notes/printers.txt"}
    vpn, plain, text = (docs["it/vpn-setup.markdown"], docs["it/no-heading.md"],
                        docs["notes/printers.txt"])
    assert isinstance(vpn, SourceDocument) and vpn.title == "Connecting to the VPN"
    assert vpn.url == "https://files/kb/it/vpn-setup.markdown"
    assert isinstance(plain, SourceDocument) and plain.title == "No heading"
    assert plain.access == ("public",) and plain.updated_at is None  # mtime is no date
    assert isinstance(text, SourceDocument) and text.title == "PRINTERS"


async def test_html_is_converted_with_head_metadata(kb: Path) -> None:
    write(kb, "pricing.htm", HTML)
    [doc] = await collect(FolderConnector(kb))
    assert isinstance(doc, SourceDocument)
    assert (doc.title, doc.tags, doc.doc_type) == ("Pricing FAQ", ("pricing", "plans"), "faq")
    assert "# Pricing FAQ" in doc.body and "**monthly**" in doc.body
    assert "| Starter | $10 |" in doc.body
    assert "tracking" not in doc.body and "color" not in doc.body


async def test_pdf_text_and_title(kb: Path) -> None:
    write(kb, "manual.pdf", make_pdf(["Hold the reset button.", "Wait ten seconds."],
                                     title="Printer manual"))
    [doc] = await collect(FolderConnector(kb))
    assert isinstance(doc, SourceDocument)
    assert doc.title == "Printer manual"
    assert "Hold the reset button." in doc.body and "Wait ten seconds." in doc.body


@pytest.mark.parametrize("text", [
    "O café da estação fica no rés-do-chão; o horário de verão começa às nove.",  # Portuguese
    "Die Büroräume öffnen um acht Uhr. Größere Pakete bitte am Empfang abholen.",
])
async def test_a_latin_1_file_is_read_in_its_own_encoding(kb: Path, text: str) -> None:
    write(kb, "legacy.txt", text.encode("latin-1"))
    [doc] = await collect(FolderConnector(kb))
    assert isinstance(doc, SourceDocument) and doc.body.strip() == text


async def test_pdf_ligatures_become_the_letters_they_join(kb: Path) -> None:
    # In Helvetica's standard encoding 0xAE and 0xAF are the "fi" and "fl" ligature glyphs.
    write(kb, "office.pdf", make_pdf(["Ask the \xaenance team about the \xafoor plan."]))
    [doc] = await collect(FolderConnector(kb))
    assert isinstance(doc, SourceDocument)
    assert "Ask the finance team about the floor plan." in doc.body
    assert "\ufb01" not in doc.body and "\ufb02" not in doc.body


@pytest.mark.parametrize("rel, content, fragment", [
    ("broken.pdf", b"this is not a pdf at all", "not a readable PDF"),
    ("bad.md", "---\ntitle: [unclosed\n---\nBody", "invalid YAML front matter"),
    ("list.md", "---\n- a\n- b\n---\nBody", "not a mapping"),
    ("binary.txt", b"\x00\x81\x8d\x8f\x90\x9d\xff\xfe" * 50, "no other text encoding"),
    ("date.md", "---\ntitle: T\nupdated_at: yesterday\n---\nBody", "not an ISO-8601 date"),
])
async def test_unreadable_files_become_failures(kb: Path, rel: str, content: str | bytes,
                                                fragment: str) -> None:
    write(kb, rel, content)
    write(kb, "good.md", "# Good\n\nFine.")
    items = by_id(await collect(FolderConnector(kb)))
    assert isinstance(items["good.md"], SourceDocument)
    failure = items[rel]
    assert isinstance(failure, DocumentFailure)
    assert failure.error.startswith(rel) and fragment in failure.error


async def test_broken_front_matter_keeps_its_declared_id(kb: Path) -> None:
    write(kb, "policy.md", "---\ndoc_id: hr-policy\ntitle: [oops\n---\nBody")
    [failure] = await collect(FolderConnector(kb))
    assert failure == DocumentFailure("hr-policy", failure.error)
    assert await FolderConnector(kb).list_ids() == {"hr-policy"}


async def test_since_filters_by_modification_time(kb: Path) -> None:
    write(kb, "old.md", "# Old", age_s=7200)
    write(kb, "new.md", "# New", age_s=0)
    since = datetime.now(UTC) - timedelta(minutes=30)
    assert [d.doc_id for d in await collect(FolderConnector(kb), since)] == ["new.md"]


async def test_list_ids_skips_hidden_and_unsupported_files(kb: Path) -> None:
    write(kb, "a.md", "---\ndoc_id: alpha\n---\n# A")
    write(kb, "b.html", '<html><head><meta name="doc_id" content="beta"></head></html>')
    write(kb, "c.txt", "C")
    write(kb, ".hidden.md", "# Hidden")
    write(kb, ".git/config.md", "# Git")
    write(kb, "image.png", b"\x89PNG")
    ids = await FolderConnector(kb).list_ids()
    assert ids == {"alpha", "beta", "c.txt"}
    assert ids == {d.doc_id for d in await collect(FolderConnector(kb))}


async def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SyncError) as caught:
        await collect(FolderConnector(tmp_path / "nowhere"))
    assert "does not exist" in caught.value.user_message


async def test_the_sample_knowledge_base_reads_cleanly() -> None:
    items = await collect(FolderConnector(SAMPLE_KNOWLEDGE))
    failures = [i for i in items if isinstance(i, DocumentFailure)]
    assert failures == [] and len(items) >= 30
    assert len({i.doc_id for i in items}) == len(items)
    assert await FolderConnector(SAMPLE_KNOWLEDGE).list_ids() == {i.doc_id for i in items}


class TestFolderContract(ConnectorContract):
    kind = "folder"

    @pytest.fixture
    def rig(self, kb: Path) -> Rig:
        write(kb, "hr/leave.md", article("Parental leave", "Sixteen weeks of paid leave.",
                                         access="[hr, people-leads]"))
        write(kb, "it/vpn.md", "# Connecting to the VPN\n\nUse WireGuard with the office "
              "profile.")
        write(kb, "notes/printers.txt", "PRINTERS\n\nTray two jams on Mondays.")
        return Rig(
            SourceConfig("kb", url="https://files.example/kb/", path=kb), {},
            frozenset({"hr/leave.md", "it/vpn.md", "notes/printers.txt"}),
            {"it/vpn.md": Seen("Connecting to the VPN", "https://files.example/kb/it/vpn.md",
                               "Use WireGuard with the office profile.")},
            public="it/vpn.md", restricted=("hr/leave.md", frozenset({"hr", "people-leads"})),
            remove=lambda: (kb / "notes/printers.txt").unlink() or "notes/printers.txt",
            bad_credential=Trouble(("`path`", "missing"), source={"path": kb / "missing"}),
            unreadable=Trouble(("broken.pdf", "not a readable PDF"), apply=lambda: write(
                kb, "broken.pdf", b"this is not a pdf at all") and None))
