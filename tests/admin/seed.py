"""Seeds a database with interactions, candidates, votes, document stats and sync state."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from storage.db import Database
from storage.models import (
    DocumentStats,
    Feedback,
    Interaction,
    InteractionSource,
    SourceDocument,
    SyncRun,
)
from storage.rollup import rebuild

NOW = datetime.now(UTC).replace(microsecond=0)  # recent: the pages look back from now
SCRIPT = "<script>alert(1)</script>"
STATUSES = ("answered", "answered", "answered", "no_answer", "degraded", "error")
TOPICS = ("reset my password", "expense report deadline", "vpn on linux", "parental leave",
          "printer on floor 3", "laptop refresh", "travel booking", "holiday calendar")


def _interaction(i: int, created_at: datetime) -> dict[str, Any]:
    topic = TOPICS[i % len(TOPICS)]
    return {
        "id": i, "created_at": created_at,
        "platform": ("slack", "teams")[i % 2], "workspace": "T1",
        "channel": f"#team-{i % 12}", "thread": "", "user_id": f"U{i % 300}",
        "correlation_id": f"c{i}", "question": f"How do I handle {topic}? ({i})",
        "search_query": topic, "answer": f"For {topic}, follow the handbook [1].",
        "status": STATUSES[i % len(STATUSES)], "mode": ("accurate", "fast")[i % 5 == 0],
        "ab_arm": "", "timings_ms": {"retrieve": 40 + i % 60, "grade": 300 + i % 900,
                                     "generate": 900 + i % 1500, "total": 1300 + i % 2400},
        "usage": {"grade": {"input_tokens": 4000, "output_tokens": 300},
                  "generate": {"input_tokens": 3000, "output_tokens": 250}},
        "models": {"grade": "claude-haiku-5-5", "generate": "claude-sonnet-5-5"},
    }


def _sources(i: int, docs: int) -> list[dict[str, Any]]:
    return [{"interaction_id": i, "rank": r, "chunk_id": f"d{(i + r) % docs}#0",
             "doc_id": f"d{(i + r) % docs}", "title": f"Handbook page {(i + r) % docs}",
             "url": f"https://kb.example/{(i + r) % docs}", "retrieval_score": 1.0 / (r + 1),
             "grade_score": round(0.9 - r * 0.2, 2), "grade_reason": f"covers part {r}",
             "grade_source": "llm", "selected": r < 2, "cited": r == 0} for r in range(4)]


def seed(db: Database, count: int, *, days: int = 30, docs: int = 300, now: datetime = NOW,
         batch: int = 5000) -> None:
    """`count` interactions over `days`, four candidates each, a vote on every third; the
    per-day rollups counted from them."""
    rng = random.Random(7)
    step = days * 86400 / count
    with db.write() as session:
        for start in range(1, count + 1, batch):
            ids = range(start, min(count + 1, start + batch))
            # Spread over the window, oldest first, so ids grow with time as in production.
            rows = [_interaction(i, now - timedelta(seconds=(count - i + rng.random()) * step))
                    for i in ids]
            session.execute(insert(Interaction), rows)
            session.execute(insert(InteractionSource),
                            [s for i in ids for s in _sources(i, docs)])
            votes = [{"interaction_id": i, "user_id": f"U{i % 300}", "vote": (1, -1)[i % 7 == 0],
                      "channel": "button", "comment": "outdated" if i % 7 == 0 else None,
                      "created_at": now, "updated_at": now} for i in ids if i % 3 == 0]
            if votes:
                session.execute(insert(Feedback), votes)
        session.execute(insert(DocumentStats), [_doc_stats(d, now) for d in range(docs)])
        session.execute(insert(SourceDocument), [source_doc(d, now) for d in range(docs + 20)])
        session.execute(insert(SyncRun), [sync_run(k, now) for k in range(5)])
        rebuild(session.connection())  # rows went in around the repositories: count them


def _doc_stats(d: int, now: datetime) -> dict[str, Any]:
    """Every 4th page graded low by a model; every 4th+2 low by the fast mode's heuristic only,
    no model ever graded it."""
    model = d % 4 != 2
    return {"doc_id": f"d{d}", "title": f"Handbook page {d}", "url": f"https://kb.example/{d}",
            "retrieved": 10 + d, "graded": 10 + d, "graded_relevant": d % 10,
            "grade_score_sum": (10 + d) * (0.2 if d % 4 in (0, 2) else 0.8),
            "model_graded": 10 + d if model else 0,
            "model_grade_sum": (10 + d) * (0.2 if d % 4 == 0 else 0.8) if model else 0.0,
            "selected": d,
            "cited": d // 2, "thumbs_up": d % 5, "thumbs_down": d % 3,
            "first_seen": now - timedelta(days=30), "last_seen": now}


def source_doc(d: int, now: datetime) -> dict[str, Any]:
    failed = d % 50 == 49
    return {"source": "handbook", "doc_id": f"d{d}", "content_hash": f"h{d}",
            "updated_at": now, "chunk_count": 3, "last_synced": now,
            "status": "failed" if failed else "ok",
            "error": "the page returned HTTP 500" if failed else ""}


def sync_run(k: int, now: datetime) -> dict[str, Any]:
    started = now - timedelta(hours=k)
    return {"source": "handbook", "full": k == 4, "status": "ok" if k else "partial",
            "started_at": started, "finished_at": started + timedelta(minutes=2),
            "added": k, "updated": 2, "deleted": 0, "unchanged": 300, "failed": 1 if not k
            else 0, "chunks_written": 3 * k, "errors": ["d49: the page returned HTTP 500"]
            if not k else []}
