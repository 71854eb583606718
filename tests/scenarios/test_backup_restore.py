"""`sift db backup` then `sift db restore` into fresh servers (a new PostgreSQL cluster, a new
managed Weaviate with empty data): the same question gets the same answer, an admin's
override included. Everything runs through the `sift` command line, as an operator would."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.cli import main
from tests.pg import Cluster, _bin_dir
from weaviate_server.process import free_ports

pytestmark = [pytest.mark.weaviate, pytest.mark.postgres, pytest.mark.slow]

QUESTION = "How many vacation days do I get?"


def use(monkeypatch: pytest.MonkeyPatch, data_dir: Path, database_url: str) -> None:
    """The environment of one Sift: its data (and managed Weaviate) and its database."""
    ports = free_ports()
    monkeypatch.setenv("SIFT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("SIFT_DATABASE_URL", database_url)
    for name, port in (("HTTP", ports.http), ("GRPC", ports.grpc), ("GOSSIP", ports.gossip),
                       ("DATA", ports.data), ("RAFT", ports.raft),
                       ("RAFT_RPC", ports.raft_rpc), ("PROFILING", ports.profiling)):
        monkeypatch.setenv(f"SIFT_WEAVIATE__{name}_PORT", str(port))


def ask(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(["ask", "--json", "--mode", "fast", QUESTION]) == 0
    answer = json.loads(capsys.readouterr().out)
    return {key: answer[key] for key in ("status", "text", "citations")}


def cited_docs(answer: dict[str, object]) -> list[str]:
    return [str(c["doc_id"]) for c in answer["citations"]]  # type: ignore[attr-defined,index]


def test_a_backup_restored_into_fresh_servers_answers_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("SIFT_")
                 and not n.startswith("SIFT_TEST_")]:
        monkeypatch.delenv(name)
    bin_dir = _bin_dir()
    assert bin_dir is not None
    source, fresh = Cluster(bin_dir), Cluster(bin_dir)
    try:
        use(monkeypatch, tmp_path / "before", source.start())
        assert main(["sync"]) == 0  # the sample knowledge base, embedded by the real model
        first = ask(capsys)
        assert first["status"] == "answered" and cited_docs(first)
        hidden = cited_docs(first)[0]
        assert main(["docs", "hide", hidden]) == 0  # an admin's say, kept in the database
        before = ask(capsys)
        assert hidden not in cited_docs(before)
        assert main(["db", "backup", str(tmp_path / "backup")]) == 0
        source.stop()  # the old servers are gone: nothing below can read from them

        use(monkeypatch, tmp_path / "after", fresh.start())
        assert main(["db", "restore", str(tmp_path / "backup")]) == 0
        after = ask(capsys)
        assert after == before
        # A second restore into the now-full database is refused in one sentence.
        capsys.readouterr()
        assert main(["db", "restore", str(tmp_path / "backup")]) != 0
        assert "already holds Sift's tables" in capsys.readouterr().err
    finally:
        # The commands leave their managed Weaviate running for the next one (keepalive);
        # the test's servers stop with it.
        for data_dir in ("before", "after"):
            monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path / data_dir))
            main(["weaviate", "stop"])
        source.stop()
        fresh.stop()
