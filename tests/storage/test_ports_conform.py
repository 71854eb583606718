"""mypy proves the repositories satisfy rag's, sync's and the chat service's ports."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot.chat.service import (
    ChatStores,
    DedupeStore,
    FeedbackStore,
    HistoryStore,
    InteractionLinks,
    QuotaStore,
)
from rag.ports import GradeCache, GradeKey, InteractionRecorder, SyncProgress
from rag.types import Answer, Grade, GradeSource
from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.feedback import FeedbackRepository
from storage.grade_cache import GradeCacheRepository
from storage.history import HistoryRepository
from storage.interactions import InteractionRepository
from storage.quota import QuotaRepository
from storage.sync_state import SyncStateRepository
from sync.ports import DocumentState, RunCounts, SyncState
from tests.storage.builders import answer


def wire(db: Database) -> tuple[GradeCache, InteractionRecorder, SyncState, ChatStores]:
    """Assignments to the port types: mypy rejects this module if a repository drifts."""
    cache: GradeCache = GradeCacheRepository(db, ttl=timedelta(days=1))
    recorder: InteractionRecorder = InteractionRepository(db)
    state: SyncState = SyncStateRepository(db)
    dedupe: DedupeStore = DedupeRepository(db)
    links: InteractionLinks = InteractionRepository(db)
    feedback: FeedbackStore = FeedbackRepository(db)
    history: HistoryStore = HistoryRepository(db)
    quota: QuotaStore = QuotaRepository(db)
    syncs: SyncProgress = SyncStateRepository(db)
    assert syncs.first_syncs_running() == []
    return cache, recorder, state, ChatStores(dedupe, links, feedback, history, quota)


def test_the_ports_work_through_their_protocol_types(database: Database) -> None:
    cache, recorder, state, stores = wire(database)
    key = GradeKey("q", "c#0", "h", "g1")
    cache.put_many({key: Grade(0.7, "ok", GradeSource.LLM, "m")})
    hit = cache.get_many([key])[key]
    assert (hit.score, hit.reason, hit.model) == (0.7, "ok", "m")
    recorded: Answer = answer("q")
    iid = recorder.record(recorded)
    stores.links.attach_message(iid, "C1", "1.1")
    stores.feedback.vote(iid, "U1", 1, "reaction")
    assert stores.dedupe.claim("e1", 60) and not stores.dedupe.claim("e1", 60)
    state.record_document("kb", "a", content_hash="h", chunk_count=1, updated_at=None)
    document: DocumentState = state.documents("kb")["a"]
    assert (document.doc_id, document.content_hash, document.chunk_count, document.status) == (
        "a", "h", 1, "ok")
    state.finish_run(state.start_run("kb", full=True), RunCounts(), [], status="ok")
    assert state.last_success("kb") is not None


def test_mypy_accepts_the_wiring() -> None:
    from mypy import api

    root = Path(__file__).resolve().parents[2]
    out, err, status = api.run(["--config-file", str(root / "pyproject.toml"),
                                "--no-error-summary", str(Path(__file__).resolve())])
    assert status == 0, out + err
