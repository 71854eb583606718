"""The canary suite for a folder source's links: whatever lies outside the source's folder
(a link to /etc/passwd, to another folder, a linked directory) never reaches the index, an
answer or the report's text, and a file indexed before it became such a link is pruned."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.cli import main
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from tests.bot.test_cli_ask import sift_environment
from tests.conftest import index_config, unique_collection
from tests.permissions.canary import PUB, QUESTION, write_canaries
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

OUTSIDE = "CANARY-OUTSIDE-Q6T2"  # in a file next to, not inside, the source's folder
PASSWD_LINE = "root:x:0:0:"  # the first line of any Debian /etc/passwd


def outside_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "offsite.md"
    path.write_text(f"---\ntitle: Offsite budget code {OUTSIDE}\naccess: [public]\n---\n\n"
                    f"The budget code for the team offsite is {OUTSIDE}.\n")
    return path


@pytest.fixture
async def home(tmp_path: Path, weaviate_server: ManagedWeaviate, embedder: LocalEmbedder,
               monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    kb = tmp_path / "kb"
    write_canaries(kb)
    (tmp_path / "sift.toml").write_text(
        f'[[sources]]\nname = "links"\nkind = "folder"\npath = "{kb}"\n')
    collection = unique_collection("Links")
    with sift_environment(monkeypatch, weaviate_server, collection, tmp_path):
        monkeypatch.setenv("SIFT_CONFIG", str(tmp_path / "sift.toml"))
        yield tmp_path
    index = WeaviateIndex(index_config(weaviate_server, collection), embedder.name,
                          embedder.dimension)
    await index.connect(ensure=False)
    await index.drop()
    await index.close()


def sift(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_links_out_of_the_folder_are_never_read_and_are_reported(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = home / "kb"
    (kb / "offsite-link.md").symlink_to(outside_file(home / "elsewhere"))
    (kb / "passwd.txt").symlink_to("/etc/passwd")
    (kb / "shared").symlink_to(home / "elsewhere", target_is_directory=True)
    (kb / "nested").mkdir()
    (kb / "nested" / "up.md").symlink_to(Path("..", "..", "elsewhere", "offsite.md"))
    _, out = sift(capsys, "sync")
    assert OUTSIDE not in out and PASSWD_LINE not in out
    for name in ("offsite-link.md", "passwd.txt", "shared", "nested/up.md"):
        assert f"{name}: not read: a link out of the source's folder" in out, (name, out)
    code, out = sift(capsys, "ask", "--json", QUESTION)
    assert code == 0, out
    assert PUB in out  # the folder's own public document answers
    assert OUTSIDE not in out and PASSWD_LINE not in out
    _, out = sift(capsys, "ask", "--json", "which user has the id zero? root:x:0:0")
    assert PASSWD_LINE not in out and "/bin/bash" not in out


def test_a_file_that_becomes_a_link_out_is_removed_from_the_index(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = home / "kb"
    inside = kb / "offsite-notes.md"
    inside.write_text("---\ntitle: Offsite notes\n---\n\nThe offsite notes say bring a coat.\n")
    assert sift(capsys, "sync")[0] == 0
    code, out = sift(capsys, "ask", "--json", "what do the offsite notes say?")
    assert code == 0 and "bring a coat" in out
    inside.unlink()
    inside.symlink_to(outside_file(home / "elsewhere"))
    _, out = sift(capsys, "sync")
    assert "offsite-notes.md: not read: a link out of the source's folder" in out
    code, out = sift(capsys, "ask", "--json", "what do the offsite notes say?")
    assert code == 0, out
    data = json.loads(out[out.index("{"):])
    assert "bring a coat" not in out and OUTSIDE not in out
    assert all("offsite-notes" not in c["doc_id"] for c in data["candidates"])
