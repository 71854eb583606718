"""`sift ask` and `sift chat` end to end on the synced sample knowledge base, Claude or not."""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from bot.cli import main
from rag import messages
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from storage.db import Database
from storage.models import DocumentStats, Feedback, Interaction
from storage.sync_state import SyncStateRepository
from tests.conftest import index_config, unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.llm_rigs import PROVIDERS, running
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

# examples/knowledge/it/vpn-setup.md: "Sessions last 12 hours, after which you sign in again."
QUESTION = "How long does a Relay Connect VPN session last before I sign in again?"
VPN_DOC = "it-howto-vpn"
VPN_MARKER = "Sessions last 12 hours"
UNRELATED = "What is the airspeed of an unladen swallow?"
USER = "ask-tester"
CITATION_KEYS = {"n", "doc_id", "title", "url", "chunk_id"}
CANDIDATE_KEYS = {"rank", "chunk_id", "doc_id", "title", "retrieval_score", "grade", "selected"}
EXPLAIN_ROW = re.compile(r"^ [ *]\s*\d+\s+\d+\.\d\d\s+(?P<score>\d\.\d\d) (?P<source>\w+)\s+"
                         r"(?P<reason>.*)$", re.M)


@contextlib.contextmanager
def sift_environment(monkeypatch: pytest.MonkeyPatch, server: ManagedWeaviate,
                     collection: str, home: Path) -> Iterator[None]:
    """Only the settings a test names: no API key, no config file, this Weaviate and data dir.
    The CLI configures the root logger for itself; it is put back afterwards."""
    for name in list(os.environ):
        if name.startswith("SIFT_") or name == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(name)
    env = {"SIFT_DATA_DIR": str(home / "data"), "SIFT_WEAVIATE_URL": server.url,
           "SIFT_WEAVIATE_API_KEY": server.api_key,
           "SIFT_WEAVIATE__GRPC_URL": f"127.0.0.1:{server.ports.grpc}",
           "SIFT_WEAVIATE__COLLECTION": collection, "SIFT_LOG_LEVEL": "WARNING",
           "LOGNAME": USER}  # getpass.getuser() reads LOGNAME first: the voter's name
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


@pytest.fixture(scope="module")
async def sample_kb(weaviate_server: ManagedWeaviate, embedder: LocalEmbedder,
                    tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """examples/knowledge synced once, through `sift sync`, into a fresh collection."""
    collection = unique_collection("Ask")
    out = io.StringIO()
    home = tmp_path_factory.mktemp("sync")
    with pytest.MonkeyPatch.context() as mp, sift_environment(
            mp, weaviate_server, collection, home), contextlib.redirect_stdout(out):
        code = await asyncio.to_thread(main, ["sync", "--json"])
    [report] = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    assert code == 0 and report["source"] == "sample" and report["failed"] == 0
    yield collection
    index = WeaviateIndex(index_config(weaviate_server, collection), embedder.name,
                          embedder.dimension)
    await index.connect(ensure=False)
    await index.drop()
    await index.close()


@pytest.fixture
def sift_env(sample_kb: str, weaviate_server: ManagedWeaviate, tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A Sift over the synced collection with its own data dir (database, grade cache)."""
    with sift_environment(monkeypatch, weaviate_server, sample_kb, tmp_path):
        yield tmp_path / "data"


@pytest.fixture
def fake_claude(sift_env: Path, fake_anthropic: FakeAnthropic,
                monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    monkeypatch.setenv("SIFT_ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("SIFT_ANTHROPIC_BASE_URL", fake_anthropic.url)
    return fake_anthropic


def grade_vpn_chunks(reasons: dict[str, float]) -> Callable[[str, str], tuple[float, str]]:
    """A grader that passes only the chunk with the session length; every reason it gives is
    numbered, so the test can find each one in the output, and kept with its score."""
    numbers = itertools.count(1)

    def grade(question: str, document: str) -> tuple[float, str]:
        relevant = VPN_MARKER in document
        score = 0.9 if relevant else 0.1
        reason = (f"Gives the VPN session length (grade {next(numbers)})." if relevant
                  else f"Says nothing about VPN sessions (grade {next(numbers)}).")
        reasons[reason] = score
        return score, reason

    return grade


def ask_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["ask", "--json", *args])
    out = capsys.readouterr().out
    assert code == 0, out
    data: dict[str, Any] = json.loads(out)
    return data


def assert_answer_shape(data: dict[str, Any]) -> None:
    """The keys other tools rely on (issue 5, Interfaces), each with the right type."""
    assert isinstance(data["text"], str) and isinstance(data["status"], str)
    assert isinstance(data["models"], dict)
    assert isinstance(data["timings_ms"], dict) and isinstance(data["usage"], dict)
    assert {"retrieve", "grade", "total"} <= set(data["timings_ms"])
    assert all(isinstance(ms, int | float) for ms in data["timings_ms"].values())
    assert all(isinstance(u, dict) for u in data["usage"].values())
    for c in data["citations"]:
        assert set(c) >= CITATION_KEYS
        assert isinstance(c["n"], int) and all(isinstance(c[k], str) for k in CITATION_KEYS - {"n"})
    assert data["candidates"]
    for c in data["candidates"]:
        assert set(c) >= CANDIDATE_KEYS
        assert isinstance(c["rank"], int) and isinstance(c["retrieval_score"], float)
        assert isinstance(c["selected"], bool) and set(c["grade"]) == {"score", "reason",
                                                                       "source"}


def assert_citations_valid(data: dict[str, Any]) -> None:
    """Every [n] in the text has a citation n, and every citation is used and is a candidate."""
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", data["text"])}
    numbers = [c["n"] for c in data["citations"]]
    assert cited and cited == set(numbers) and numbers == list(range(1, len(numbers) + 1))
    chunks = {c["chunk_id"]: c["doc_id"] for c in data["candidates"] if c["selected"]}
    assert all(chunks.get(c["chunk_id"]) == c["doc_id"] for c in data["citations"])


def test_fast_mode_without_a_key_answers_from_the_sample_kb(
        sift_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ask_json(capsys, QUESTION)
    assert_answer_shape(data)
    assert (data["status"], data["mode"], data["extractive"]) == ("answered", "fast", True)
    assert data["citations"] and data["citations"][0]["doc_id"] == VPN_DOC
    assert_citations_valid(data)
    assert {c["grade"]["source"] for c in data["candidates"]} == {"heuristic"}
    assert data["usage"] == {} and "generate" not in data["models"]  # no Claude was asked


def test_nothing_relevant_says_plainly_it_is_not_covered(
        sift_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ask_json(capsys, UNRELATED)
    assert (data["status"], data["text"], data["citations"]) == ("no_answer",
                                                                 messages.NO_ANSWER, [])
    assert not any(c["selected"] for c in data["candidates"])


async def test_accurate_mode_grades_selects_and_cites_with_claude(
        fake_claude: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    reasons: dict[str, float] = {}
    fake_claude.grade_rule = grade_vpn_chunks(reasons)
    data = await asyncio.to_thread(ask_json, capsys, QUESTION)
    assert_answer_shape(data)
    assert (data["status"], data["mode"], data["extractive"]) == ("answered", "accurate", False)
    candidates = data["candidates"]
    assert {c["grade"]["source"] for c in candidates} == {"llm"}
    assert len(fake_claude.calls("grade")) == len(candidates) == len(reasons)
    assert len(fake_claude.calls("answer")) == 1
    assert {c["grade"]["reason"]: c["grade"]["score"] for c in candidates} == reasons
    selected = [c for c in candidates if c["selected"]]
    assert selected and {c["doc_id"] for c in selected} == {VPN_DOC}
    assert all(c["grade"]["score"] == 0.9 for c in selected)
    assert_citations_valid(data)
    assert {c["doc_id"] for c in data["citations"]} == {VPN_DOC}
    assert data["models"]["grade"] == "claude-haiku-5-5"
    assert data["models"]["generate"] == "claude-sonnet-5-5"
    assert {"grade", "generate"} <= set(data["usage"])


async def test_explain_lists_every_candidate_with_the_graders_reason(
        fake_claude: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    reasons: dict[str, float] = {}
    fake_claude.grade_rule = grade_vpn_chunks(reasons)
    code = await asyncio.to_thread(main, ["ask", "--explain", QUESTION])
    out = capsys.readouterr().out
    assert code == 0, out
    answer, explained = out.split("Candidates (mode: accurate", 1)
    assert "Sources:\n  [1] Setting up the Relay Connect VPN — https://" in answer
    # Each column under its heading: the header's words end where the row's figures end.
    header = explained.splitlines()[1]
    first = next(m for m in EXPLAIN_ROW.finditer(explained))
    row = first.group(0)
    assert header.split() == ["#", "search", "grade", "graded", "by", "reason"]
    assert header.index("grade") + len("grade") == row.index(first["score"]) + 4
    assert header.index("graded by") == row.index(first["source"])
    rows = {m["reason"]: (float(m["score"]), m["source"]) for m in EXPLAIN_ROW.finditer(out)}
    assert reasons and rows == {reason: (score, "llm") for reason, score in reasons.items()}
    assert len(EXPLAIN_ROW.findall(explained)) == len(fake_claude.calls("grade"))


async def test_mode_fast_grades_heuristically_with_claude_configured(
        fake_claude: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    data = await asyncio.to_thread(ask_json, capsys, "--mode", "fast", QUESTION)
    assert (data["status"], data["mode"]) == ("answered", "fast")
    assert {c["grade"]["source"] for c in data["candidates"]} == {"heuristic"}
    # fast mode changes the grader only: a configured Claude still writes the answer
    assert fake_claude.calls("grade") == []
    assert len(fake_claude.calls("answer")) == 1 and not data["extractive"]


class ChatSession:
    """`sift chat` on a thread, its stdin a pipe the test writes one line at a time."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        read_end, write_end = os.pipe()
        self._stdin = os.fdopen(read_end, "r")
        monkeypatch.setattr(sys, "stdin", self._stdin)
        self._typed = os.fdopen(write_end, "w", buffering=1)
        self.code: int | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.code = main(["chat"])
        except BaseException as exc:  # reported by the test, not lost on the thread
            self.error = exc

    def type(self, line: str) -> None:
        self._typed.write(line + "\n")

    def rows_when(self, database: Database, model: Any, ready: Callable[[list[Any]], bool],
                  timeout_s: float = 180) -> list[Any]:
        """Rows of `model` once `ready` holds; the chat writes them from its own thread."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._thread.is_alive():
            with contextlib.suppress(OperationalError), database.read() as session:
                rows = list(session.scalars(select(model)))
                if ready(rows):
                    return rows
            time.sleep(0.2)
        raise AssertionError(f"{model.__name__} rows never became ready "
                             f"(chat exit code {self.code}, error {self.error!r})")

    def close(self) -> None:
        """End of input ends the chat even when a test failed half-way through."""
        if not self._typed.closed:
            self._typed.close()
        self._thread.join(timeout=60)
        self._stdin.close()


def thumbs(database: Database, doc_id: str) -> tuple[int, int]:
    with database.read() as session:
        stats = session.get(DocumentStats, doc_id)
        assert stats is not None
        return stats.thumbs_up, stats.thumbs_down


def test_chat_votes_on_the_last_answer_and_a_new_vote_replaces_the_old(
        sift_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    database = Database(f"sqlite:///{sift_env / 'sift.db'}")
    chat = ChatSession(monkeypatch)
    try:
        chat.type("+")  # nothing answered yet
        chat.type(QUESTION)
        chat.type("+")
        [up] = chat.rows_when(database, Feedback, lambda rows: len(rows) == 1)
        [interaction] = chat.rows_when(database, Interaction, lambda rows: len(rows) == 1)
        assert (interaction.platform, interaction.user_id, interaction.question) == (
            "terminal", USER, QUESTION)
        assert (up.interaction_id, up.user_id, up.vote, up.channel) == (
            interaction.id, USER, 1, "terminal")
        assert thumbs(database, VPN_DOC) == (1, 0)
        chat.type("-")
        [down] = chat.rows_when(database, Feedback, lambda rows: rows[0].vote == -1)
        assert (down.id, down.interaction_id, down.channel) == (up.id, interaction.id,
                                                                "terminal")
        assert thumbs(database, VPN_DOC) == (0, 1)
        chat.type("exit")
    finally:
        chat.close()
        database.dispose()
    out = capsys.readouterr().out
    assert (chat.code, chat.error) == (0, None)
    assert out.count("(nothing to vote on yet)") == 1
    assert out.count(messages.FEEDBACK_THANKS) == 2
    assert "sift> " in out and "Sources:" in out and VPN_MARKER in out


PRODUCTION = "How do I rotate the production database credentials?"
PRODUCTION_DOC = "eng-runbook-prod-db-creds"  # access: [engineering] in the sample


def test_the_sample_s_restricted_runbook_shows_only_as_a_member_of_its_group(
        sift_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def cited(*who: str) -> list[str]:
        return [c["doc_id"] for c in ask_json(capsys, *who, PRODUCTION)["citations"]]

    assert PRODUCTION_DOC not in cited()  # the public
    assert PRODUCTION_DOC not in cited("--as", "someone@northwind-relay.example")
    assert cited("--as", "priya@northwind-relay.example")[0] == PRODUCTION_DOC


def test_a_follow_up_without_a_model_carries_the_previous_question_s_subject(
        sift_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = Database(f"sqlite:///{sift_env / 'sift.db'}")
    chat = ChatSession(monkeypatch)
    try:
        chat.type("What is the expense limit for client dinners?")
        chat.rows_when(database, Interaction, lambda rows: len(rows) == 1)
        chat.type("and in Toronto?")
        rows = chat.rows_when(database, Interaction, lambda rows: len(rows) == 2)
        chat.type("exit")
    finally:
        chat.close()
        database.dispose()
    follow_up = max(rows, key=lambda row: row.id)
    assert follow_up.question == "and in Toronto?"
    assert follow_up.search_query == "What is the expense limit for client dinners in Toronto?"
    assert follow_up.status == "answered", follow_up.answer
    assert "CAD 120" in follow_up.answer  # the client-entertainment row, in Toronto's currency


def interactions(data_dir: Path) -> int:
    database = Database(f"sqlite:///{data_dir / 'sift.db'}")
    try:
        with database.read() as session:
            return len(session.scalars(select(Interaction)).all())
    finally:
        database.dispose()


def test_asking_an_empty_index_says_how_to_sync_and_records_no_gap(
        weaviate_server: ManagedWeaviate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with sift_environment(monkeypatch, weaviate_server, unique_collection("Empty"), tmp_path):
        code = main(["ask", QUESTION])
    out, err = capsys.readouterr()
    assert code == 1 and messages.NO_ANSWER not in out
    assert "The index is empty" in err and "`sift sync`" in err
    assert interactions(tmp_path / "data") == 0


def test_asking_an_empty_index_while_a_sync_runs_says_to_wait_for_it(
        weaviate_server: ManagedWeaviate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # `sift serve` is ready before its first sync of an empty index has written anything.
    with sift_environment(monkeypatch, weaviate_server, unique_collection("Syncing"), tmp_path):
        database = Database(f"sqlite:///{tmp_path / 'data' / 'sift.db'}")
        database.upgrade()
        SyncStateRepository(database).start_run("handbook", full=True)
        database.dispose()
        code = main(["ask", QUESTION])
    out, err = capsys.readouterr()
    assert code == 1 and messages.NO_ANSWER not in out
    assert "still empty" in err and "a sync of handbook has not finished" in err
    assert "run `sift sync`" not in err


def test_no_answer_while_a_first_sync_runs_says_the_knowledge_base_is_still_being_read(
        sift_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ask_json(capsys, "--mode", "fast", "who is the CEO?")["text"] == messages.NO_ANSWER
    database = Database(f"sqlite:///{sift_env / 'sift.db'}")
    database.upgrade()
    SyncStateRepository(database).start_run("handbook", full=True)  # a second source, new
    database.dispose()
    data = ask_json(capsys, "--mode", "fast", "who is the CEO?")
    assert (data["status"], data["text"]) == ("not_indexed", messages.NOT_INDEXED_YET)
    answered = ask_json(capsys, "--mode", "fast", QUESTION)
    assert answered["status"] == "answered" and answered["text"] != messages.NOT_INDEXED_YET


def test_the_log_at_info_is_about_sift_not_each_http_request(
        sift_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SIFT_LOG_LEVEL", "INFO")
    assert main(["ask", "--mode", "fast", QUESTION]) == 0
    err = capsys.readouterr().err
    assert "HTTP Request" not in err and "/v1/schema" not in err


def test_accurate_mode_without_a_key_says_it_answered_in_fast_mode(
        sift_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ask_json(capsys, "--mode", "accurate", QUESTION)
    assert data["mode"] == "fast" and data["status"] == "answered"
    assert "--mode accurate needs an Anthropic API key" in data["note"]
    assert main(["ask", "--mode", "accurate", QUESTION]) == 0
    assert "answer was made in fast mode" in capsys.readouterr().out
    assert "note" not in ask_json(capsys, "--mode", "fast", QUESTION)


def test_fast_mode_says_not_covered_when_nothing_selected_is_on_topic(
        sift_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ask_json(capsys, "--mode", "fast", "who is the CEO?")
    assert (data["status"], data["text"], data["citations"]) == ("no_answer",
                                                                 messages.NO_ANSWER, [])


def test_fast_mode_quotes_the_runbook_steps_under_one_source(
        sift_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ask_json(capsys, "--mode", "fast", "How do I rotate the staging database credentials?")
    docs = [c["doc_id"] for c in data["citations"]]
    # Only the runbook: the secrets guidelines, which link to it, used to be cited beside it.
    assert docs == ["eng-runbook-staging-db-creds"]
    text = data["text"]
    steps = [text.index(f"> _{n}. ") for n in (3, 4, 5)]  # the retrieved steps, in order
    assert steps == sorted(steps)
    assert "> vault write -f db-staging/rotate-root/relay-staging-pg" in text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_accurate_mode_answers_through_each_provider(
        provider: str, sift_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`sift ask --mode accurate` graded and cited by Claude on Bedrock, on Vertex AI, or by a
    model behind an OpenAI-compatible server, each through its SDK client and fake."""
    async with running(provider, tmp_path) as rig:
        for name, value in rig.env.items():
            monkeypatch.setenv(name, value)
        reasons: dict[str, float] = {}
        rig.fake.grade_rule = grade_vpn_chunks(reasons)
        data = await asyncio.to_thread(ask_json, capsys, "--mode", "accurate", QUESTION)
    assert (data["status"], data["mode"], data["extractive"]) == ("answered", "accurate", False)
    candidates = data["candidates"]
    assert {c["grade"]["source"] for c in candidates} == {"llm"}
    assert {c["grade"]["reason"]: c["grade"]["score"] for c in candidates} == reasons
    assert len(rig.fake.calls("grade")) == len(candidates)
    assert len(rig.fake.calls("answer")) == 1
    assert_citations_valid(data)
    assert {c["doc_id"] for c in data["citations"]} == {VPN_DOC}
    assert (data["models"]["grade"], data["models"]["generate"]) == (rig.fast_model,
                                                                     rig.answer_model)
    assert data["usage"]["grade"]["input_tokens"] > 0
