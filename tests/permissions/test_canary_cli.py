"""The permission canary suite through `sift sync` and `sift ask` on a real Weaviate: each
marker reaches exactly the askers, outputs, prompts and reports it may."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from tests.bot.test_cli_ask import sift_environment
from tests.conftest import index_config, unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.permissions.canary import (
    EMPTY,
    FIN_EMAIL,
    GROUPS_TOML,
    HR,
    HR_EMAIL,
    PUB,
    QUESTION,
    STRANGER,
    TYPO,
    markers_in,
    param_id,
    visible,
    write_canaries,
)
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]


@pytest.fixture(scope="module")
def canary_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("canary")
    write_canaries(home / "kb")
    (home / "sift.toml").write_text(
        f'[[sources]]\nname = "canary"\nkind = "folder"\npath = "{home / "kb"}"\n'
        + GROUPS_TOML)
    return home


@contextlib.contextmanager
def canary_env(mp: pytest.MonkeyPatch, server: ManagedWeaviate, collection: str,
               home: Path, data: Path) -> Iterator[None]:
    with sift_environment(mp, server, collection, data):
        mp.setenv("SIFT_CONFIG", str(home / "sift.toml"))
        mp.setenv("SIFT_RETRIEVAL__DIVERSITY", "false")
        yield


@pytest.fixture(scope="module")
async def synced(weaviate_server: ManagedWeaviate, embedder: LocalEmbedder,
                 canary_home: Path) -> AsyncIterator[tuple[str, str]]:
    """The canaries synced through `sift sync`; yields (collection, what sync printed)."""
    collection = unique_collection("Canary")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, canary_env(
            mp, weaviate_server, collection, canary_home, canary_home / "sync"), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = await asyncio.to_thread(main, ["sync"])
    assert code == 0, err.getvalue()
    yield collection, out.getvalue() + err.getvalue()
    index = WeaviateIndex(index_config(weaviate_server, collection), embedder.name,
                          embedder.dimension)
    await index.connect(ensure=False)
    await index.drop()
    await index.close()


@pytest.fixture
def env(synced: tuple[str, str], weaviate_server: ManagedWeaviate, canary_home: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with canary_env(monkeypatch, weaviate_server, synced[0], canary_home, tmp_path / "d"):
        yield tmp_path / "d"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """`--json` parsed from stdout alone (a log line on stderr, e.g. asyncio reporting a
    session another test left unclosed, is not part of it), and all that was printed."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.out + captured.err


def test_sync_reports_bad_access_and_the_unknown_group_once(synced: tuple[str, str]) -> None:
    printed = synced[1]
    assert "typo.md" in printed and "'acess'" in printed
    assert "empty.md" in printed
    assert printed.count("canary: warning access group 'secops'") == 1  # the summary, once
    assert markers_in(printed) == set()  # the report names files, never their content


ASKERS = [
    ((), visible()),
    (("--groups", "hr"), visible("hr")),
    (("--groups", "finance"), visible("finance")),
    (("--groups", "secops"), visible("secops")),
    (("--groups", "hr,finance,secops,public"), visible("hr", "finance", "secops")),
    (("--as", HR_EMAIL), visible("hr")),
    (("--as", FIN_EMAIL), visible("finance")),
    (("--as", STRANGER), visible()),
]


@pytest.mark.parametrize(("who", "expected"), ASKERS, ids=param_id)
def test_each_asker_sees_exactly_their_markers_in_json(
        env: Path, capsys: pytest.CaptureFixture[str], who: tuple[str, ...],
        expected: set[str]) -> None:
    code, data, out = run_json(capsys, "ask", "--json", *who, QUESTION)
    assert code == 0, out
    assert markers_in(json.dumps(data["candidates"])) == expected
    assert markers_in(out) == expected
    assert TYPO not in out and EMPTY not in out


def test_explain_shows_only_permitted_documents(
        env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "ask", "--explain", QUESTION)
    assert code == 0 and PUB in out
    assert markers_in(out) == {PUB}
    code, out = run(capsys, "ask", "--explain", "--groups", "finance", QUESTION)
    assert markers_in(out) == visible("finance")


@pytest.mark.parametrize("bad", [["--groups", ""], ["--groups", " , "], ["--as", ""],
                                 ["--as", "  "]])
def test_empty_groups_or_as_are_refused_in_one_sentence(
        env: Path, capsys: pytest.CaptureFixture[str], bad: list[str]) -> None:
    code, out = run(capsys, "ask", *bad, QUESTION)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("sift:")]
    assert len(lines) == 1 and lines[0].endswith(".") and bad[0] in lines[0]
    assert markers_in(out) == set()


async def test_accurate_mode_prompts_grade_cache_and_suggestions_never_leak(
        env: Path, fake_anthropic: FakeAnthropic, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("SIFT_ANTHROPIC_BASE_URL", fake_anthropic.url)
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Names the budget code.")
    code, out = await asyncio.to_thread(run, capsys, "ask", "--json", "--as", HR_EMAIL,
                                        QUESTION)
    assert code == 0, out
    hr_prompts = json.dumps([r.body for r in fake_anthropic.requests])
    assert markers_in(hr_prompts) == visible("hr")  # the LLM saw hr's documents: graded
    fake_anthropic.requests.clear()
    # The same question as the public, with hr's grades in the same cache: nothing of hr's.
    code, out = await asyncio.to_thread(run, capsys, "ask", "--json", QUESTION)
    assert code == 0, out
    assert markers_in(out) == {PUB}
    assert markers_in(json.dumps([r.body for r in fake_anthropic.requests])) == {PUB}
    # A no-answer's "closest documents" come from the same filtered candidates.
    fake_anthropic.grade_rule = lambda q, d: (0.1, "Off topic.")
    code, data, out = await asyncio.to_thread(
        run_json, capsys, "ask", "--json", "--groups", "finance",
        "Which offsite budget code expired last year?")
    assert code == 0, out
    assert data["status"] == "no_answer" and data["suggestions"]
    assert markers_in(json.dumps(data["suggestions"])) <= visible("finance")
    assert markers_in(out) <= visible("finance") and HR not in out


async def test_report_shows_restricted_titles_only_when_asked_to(
        env: Path, fake_anthropic: FakeAnthropic, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("SIFT_ANTHROPIC_BASE_URL", fake_anthropic.url)
    fake_anthropic.grade_rule = lambda q, d: (0.1, "Off topic.")  # retrieved, graded low
    for _ in range(3):
        code, out = await asyncio.to_thread(run, capsys, "ask", "--json", "--groups", "hr",
                                            QUESTION)
        assert code == 0, out
    code, out = await asyncio.to_thread(run, capsys, "report")
    assert code == 0, out
    assert markers_in(out) == {PUB} and "(restricted)" in out
    code, out = await asyncio.to_thread(run, capsys, "report", "--json")
    assert markers_in(out) == {PUB}
    code, out = await asyncio.to_thread(run, capsys, "report", "--include-restricted")
    assert markers_in(out) == visible("hr")
