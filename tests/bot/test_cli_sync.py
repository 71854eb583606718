"""`sift sync` end to end: real Weaviate, real embedder, SQLite state, in-process CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import weaviate
from weaviate.classes.init import Auth

from bot.cli import main
from sync.lock import SourceLock
from tests.conftest import unique_collection
from tests.sync.conftest import article, paragraph, write
from tests.sync.pdf import make_pdf
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate
KEYS = ["source", "added", "updated", "deleted", "unchanged", "failed", "chunks_written",
        "seconds"]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         weaviate_server: ManagedWeaviate) -> Iterator[Path]:
    """Environment for one Sift: a fresh collection, database and data dir; yields the kb."""
    collection = unique_collection("Cli")
    kb = tmp_path / "kb"
    for i in range(3):
        write(kb, f"doc{i}.md", article(f"Doc {i}", paragraph(f"topic{i}", 4)))
    config = tmp_path / "sift.toml"
    config.write_text(f'[[sources]]\nname = "kb"\nkind = "folder"\npath = "{kb}"\n\n'
                      f'[[sources]]\nname = "empty"\nkind = "folder"\npath = "{tmp_path}/e"\n')
    (tmp_path / "e").mkdir()
    env = {"SIFT_CONFIG": str(config), "SIFT_DATA_DIR": str(tmp_path / "data"),
           "SIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'sift.db'}",
           "SIFT_WEAVIATE_URL": weaviate_server.url,
           "SIFT_WEAVIATE_API_KEY": weaviate_server.api_key,
           "SIFT_WEAVIATE__GRPC_URL": f"127.0.0.1:{weaviate_server.ports.grpc}",
           "SIFT_WEAVIATE__COLLECTION": collection, "SIFT_LOG_LEVEL": "WARNING"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield kb
    with weaviate.connect_to_custom(
            http_host="127.0.0.1", http_port=weaviate_server.ports.http, http_secure=False,
            grpc_host="127.0.0.1", grpc_port=weaviate_server.ports.grpc, grpc_secure=False,
            auth_credentials=Auth.api_key(weaviate_server.api_key)) as client:
        client.collections.delete(collection)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict], str]:
    code = main(["sync", *args])
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return code, lines, out + err


def test_json_lines_per_source_and_a_quiet_second_run(site: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run(capsys, "--json")
    assert code == 0 and [list(line) for line in lines] == [KEYS, KEYS]
    kb, empty = lines
    assert (kb["source"], kb["added"], kb["failed"], empty["source"]) == ("kb", 3, 0, "empty")
    assert kb["chunks_written"] >= 3 and isinstance(kb["seconds"], float)
    _, [again], _ = run(capsys, "--json", "--source", "kb", "--full")
    assert (again["unchanged"], again["chunks_written"]) == (3, 0)


def test_a_file_that_cannot_be_read_makes_the_exit_status_1_and_the_rest_is_indexed(
        site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Cut off before its end marker: pypdf warns "EOF marker not found", then gives up.
    write(site, "broken.pdf", make_pdf(["Hold the reset button."]).replace(b"%%EOF\n", b""))
    code, lines, text = run(capsys, "--json", "--source", "kb")
    assert code == 1 and (lines[0]["added"], lines[0]["failed"]) == (3, 1)
    assert "1 document could not be read (listed above); the rest is indexed." in text
    [reported] = [line for line in text.splitlines() if "broken.pdf" in line]
    assert "not a readable PDF" in reported and reported.count("skipped") == 1
    assert "EOF marker" not in text  # pypdf's own warnings stay out of the output


def test_an_empty_folder_is_said_not_synced_in_silence(site: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, _, text = run(capsys, "--source", "empty")
    assert code == 0
    said = " ".join(text.split())  # the terminal wraps the warning
    assert "empty: warning the source has no documents to index:" in said
    assert "/e has no .docx, .htm, .html, .markdown, .md, .pdf" in said


def test_table_dry_run_and_changes(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, text = run(capsys, "--source", "kb")
    assert code == 0 and "Sync summary" in text and "kb*" in text
    write(site, "doc1.md", article("Doc 1", "Rewritten."), age_s=0)
    (site / "doc2.md").unlink()
    _, [dry], _ = run(capsys, "--json", "--source", "kb", "--full", "--dry-run")
    assert (dry["updated"], dry["deleted"], dry["unchanged"]) == (1, 1, 1)
    _, [real], _ = run(capsys, "--json", "--source", "kb", "--full")
    assert (real["updated"], real["deleted"], real["unchanged"]) == (1, 1, 1)  # dry wrote 0


def test_unknown_source_lists_the_configured_ones(site: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, text = run(capsys, "--source", "wiki")
    assert code == 2
    assert "There is no source named 'wiki'; configured sources: kb, empty." in text


def test_a_running_sync_makes_a_second_one_exit(site: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with SourceLock(tmp_path / "data" / "locks", "kb"):
        code, lines, text = run(capsys, "--json")
    assert code == 1 and "Another sync of 'kb' is running" in text
    assert [line["source"] for line in lines] == ["empty"]  # the other source still ran


def test_rebuild_drops_and_resyncs_everything(site: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "--json")
    code, lines, _ = run(capsys, "--json", "--rebuild")
    assert code == 0 and lines[0]["updated"] == 3 and lines[0]["chunks_written"] >= 3
    code, _, text = run(capsys, "--rebuild", "--source", "kb")
    assert code == 2 and "cannot be combined" in text


@pytest.mark.slow
def test_the_sample_knowledge_base_syncs_by_default(site: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SIFT_CONFIG")
    code, [sample], _ = run(capsys, "--json")
    assert code == 0 and sample["source"] == "sample"
    assert sample["added"] >= 30 and sample["failed"] == 0


def chunks_of(source: str, server: ManagedWeaviate, collection: str) -> int:
    from weaviate.classes.query import Filter

    with weaviate.connect_to_custom(
            http_host="127.0.0.1", http_port=server.ports.http, http_secure=False,
            grpc_host="127.0.0.1", grpc_port=server.ports.grpc, grpc_secure=False,
            auth_credentials=Auth.api_key(server.api_key)) as client:
        result = client.collections.get(collection).aggregate.over_all(
            total_count=True, filters=Filter.by_property("source").equal(source))
        return int(result.total_count or 0)


def test_the_footer_explains_the_star_only_when_a_row_has_one(
        site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, first = run(capsys, "--source", "kb")
    assert "kb*" in first and "* full pass" in first
    _, _, second = run(capsys, "--source", "kb")
    assert "kb*" not in second and "full pass" not in second and "Sync summary" in second


def test_a_source_no_longer_configured_is_pruned_by_the_next_sync(
        site: Path, tmp_path: Path, weaviate_server: ManagedWeaviate,
        capsys: pytest.CaptureFixture[str]) -> None:
    import os

    collection = os.environ["SIFT_WEAVIATE__COLLECTION"]
    run(capsys, "--json")
    assert chunks_of("kb", weaviate_server, collection) >= 3
    mine = tmp_path / "mine"
    write(mine, "vpn.md", article("VPN", paragraph("vpn", 3)))
    (tmp_path / "sift.toml").write_text(
        f'[[sources]]\nname = "mine"\nkind = "folder"\npath = "{mine}"\n')

    code, _, text = run(capsys, "--dry-run")
    assert code == 0 and "'kb'" in text and "'empty'" not in text
    assert chunks_of("kb", weaviate_server, collection) >= 3  # a dry run prunes nothing

    code, _, text = run(capsys)
    assert code == 0
    assert "Removed source 'kb' (no longer configured)" in text
    assert chunks_of("kb", weaviate_server, collection) == 0
    assert chunks_of("mine", weaviate_server, collection) >= 1
    _, _, again = run(capsys)
    assert "Removed" not in again  # pruned once; its sync state went with it

    # Configured again: a plain run reads it all again (its old runs prove nothing indexed).
    (tmp_path / "sift.toml").write_text(
        f'[[sources]]\nname = "mine"\nkind = "folder"\npath = "{mine}"\n\n'
        f'[[sources]]\nname = "kb"\nkind = "folder"\npath = "{site}"\n')
    code, lines, _ = run(capsys, "--json", "--source", "kb")
    assert code == 0 and lines[0]["added"] == 3
    assert chunks_of("kb", weaviate_server, collection) >= 3


def test_a_warning_prints_its_brackets_as_written(site: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # The terminal renderer once read "[[groups]]" as style markup and printed "[]".
    write(site, "secret.md", article("Secret", paragraph("secret", 3), access="[finance]"))
    code, _, text = run(capsys, "--source", "kb")
    assert code == 0
    [line] = [line for line in text.splitlines() if line.startswith("kb: warning")]
    assert "access group 'finance'" in line and "not declared in [[groups]]" in line
