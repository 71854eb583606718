"""Fail closed on the sync side: a missing `access` is the source's default; an empty, null or
misspelt one is reported and restricted to nobody; unknown groups are reported once."""

from __future__ import annotations

from pathlib import Path

import pytest

from sync.connectors.common.convert import (
    Parsed,
    build_document,
    html_to_markdown,
    read_access,
    split_front_matter,
)
from sync.connectors.folder import FolderConnector
from sync.connectors.http import HttpConfig, HttpConnector
from sync.job import JobConfig, SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder


def front(access_line: str) -> Parsed:
    return split_front_matter(f"---\ntitle: Salaries\n{access_line}\n---\n\nBands per level.\n")


@pytest.mark.parametrize(("line", "access"), [
    ("access: [hr]", ("hr",)),
    ("access: hr, finance", ("hr", "finance")),
    ("access: [public]", ("public",)),
    ("doc_type: policy", ("public",)),  # missing: the source's default
])
def test_declared_or_missing_access(line: str, access: tuple[str, ...]) -> None:
    doc = build_document("salaries.md", front(line))
    assert doc.access == access and doc.warnings == ()


@pytest.mark.parametrize("line", [
    "access: []", "access:", "access: null", "access: ''", "access: [' ']",
    "acess: [hr]", "Access: [hr]", "ACCESS: [public]", "accesss: [hr]", "acces: hr",
    "access_groups: [hr]",
])
def test_empty_null_or_misspelt_access_is_nobody_and_reported(line: str) -> None:
    doc = build_document("salaries.md", front(line))
    assert doc.access == ()
    assert len(doc.warnings) == 1 and "nobody" in doc.warnings[0]
    key = line.split(":")[0]
    assert repr(key) in doc.warnings[0]


def test_a_source_default_applies_only_when_access_is_missing() -> None:
    restricted = ("staff",)
    assert build_document("a", front("title2: x"), default_access=restricted).access == restricted
    assert build_document("a", front("access: [public]"),
                          default_access=restricted).access == ("public",)
    assert read_access({"accent": "en", "address": "x", "success": 1}, ("public",)) == \
        (("public",), ())


def test_folder_connector_uses_its_default(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nNo front matter at all.\n")
    doc = FolderConnector(tmp_path, default_access=("staff",))._load(tmp_path / "a.md", "a.md")
    assert getattr(doc, "access", None) == ("staff",)


@pytest.mark.parametrize(("item", "access", "warned"), [
    ({"access": ["hr"]}, ("hr",), False),
    ({}, ("public",), False),
    ({"access": None}, (), True),
    ({"access": []}, (), True),
    ({"access": ""}, (), True),
])
def test_http_items_fail_closed(item: dict[str, object], access: tuple[str, ...],
                                warned: bool) -> None:
    connector = HttpConnector(HttpConfig(base_url="http://127.0.0.1:9"))
    doc = connector.to_document({"id": "7", "title": "T", "body": "Text.", **item})
    assert getattr(doc, "access", None) == access
    assert bool(getattr(doc, "warnings", ())) is warned


async def test_sync_indexes_restricted_and_reports_bad_and_unknown_groups_once(
        tmp_path: Path) -> None:
    files = {"ok.md": "access: [hr]", "typo.md": "acess: [hr]", "empty.md": "access: []",
             "secret1.md": "access: [secops]", "secret2.md": "access: [secops, hr]",
             "plain.md": "tags: [x]"}
    for name, line in files.items():
        (tmp_path / name).write_text(f"---\n{line}\n---\n\n# {name}\n\nSome text here.\n")
    index = MemoryIndex()
    job = SyncJob("kb", FolderConnector(tmp_path), index, HashEmbedder(), MemorySyncState(),
                  JobConfig(known_groups=frozenset({"public", "hr"})))
    summary = await job.run()
    assert summary.counts.added == 6 and summary.counts.failed == 0
    access = {c.doc_id: c.access for c, _ in index.chunks.values()}
    assert access == {"ok.md": ("hr",), "typo.md": (), "empty.md": (),
                      "secret1.md": ("secops",), "secret2.md": ("secops", "hr"),
                      "plain.md": ("public",)}
    warnings = summary.warnings
    assert any(w.startswith("typo.md: ") and "'acess'" in w for w in warnings)
    assert any(w.startswith("empty.md: ") for w in warnings)
    unknown = [w for w in warnings if "'secops'" in w]
    assert len(unknown) == 1 and "secret1.md and 1 more" in unknown[0]
    assert len(warnings) == 3


def test_html_meta_access_and_lookalike_names() -> None:
    page = html_to_markdown('<html><head><title>Pay</title><meta name="access" content="hr">'
                            '<meta name="accessibility" content="wcag"></head>'
                            '<body><p>Bands.</p></body></html>')
    doc = build_document("pay.html", page)
    assert doc.access == ("hr",) and doc.warnings == ()
    typo = html_to_markdown('<html><head><meta name="Acess" content="hr"></head>'
                            '<body><p>Bands.</p></body></html>')
    assert build_document("pay.html", typo).access == ()
