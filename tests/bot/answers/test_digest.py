"""`sift digest --post`: a scripted week in the database, posted to fake Slack's channel,
against a hand count: gaps grouped by meaning, drafts waiting, the most 👎'd answers, the
documents past review and both arms of the help channels."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest

from bot.chat.deflection import BY_PERSON, BY_SIFT, HOLDOUT, SIFT
from bot.cli import main
from storage.answers import APPROVED, AnswerDrafts, NewDraft
from storage.columns import utc_now
from storage.db import Database
from storage.models import Feedback, Interaction
from storage.outcomes import HelpOutcomes
from storage.sync_state import SyncStateRepository
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import FakeSlack

KNOWLEDGE = "C0KNOWLEDGE"
QUESTIONS = [  # (question, status, 👎 votes, days ago)
    ("How do I get a parking badge for the Lisbon office?", "no_answer", 0, 1),
    ("Where can I get a parking badge at the Lisbon office?", "no_answer", 0, 2),
    ("Which printer should I use on the third floor?", "no_answer", 0, 3),
    ("How do I rotate the staging database credentials?", "answered", 2, 4),
    ("What is the holiday policy?", "answered", 1, 5),
    ("How do I set up the VPN?", "answered", 0, 5),  # not a gap: nobody voted it down
    ("Who approves conference travel?", "no_answer", 0, 12),  # last week's: not in this one
]


def seed(db: Database) -> None:
    now = utc_now()
    with db.write() as session:
        for n, (question, status, downs, days) in enumerate(QUESTIONS, start=1):
            session.add(Interaction(id=n, created_at=now - timedelta(days=days),
                                    platform="slack", channel="C0HELPDESK", question=question,
                                    answer="…", status=status, mode="fast"))
            session.flush()  # the votes refer to it
            session.add_all(Feedback(interaction_id=n, user_id=f"U0VOTER{v}", vote=-1,
                                     channel="button", created_at=now, updated_at=now)
                            for v in range(downs))
    drafts = AnswerDrafts(db)
    for n in range(3):
        draft, _ = drafts.add(NewDraft(
            "reaction", "slack", "T1", "C0HELPDESK", "#help", "public", f"1.{n}", f"2.{n}",
            "U0ASKER1", "U0DANA01", "dana", now, "", f"question {n}", "answer", "answer", "",
            ("public",)))
    drafts.review(draft.id, APPROVED, "admin")  # two stay pending
    state = SyncStateRepository(db)
    state.record_document("handbook", "old-runbook.md", content_hash="h", chunk_count=1,
                          updated_at=now - timedelta(days=100))
    state.record_document("handbook", "fresh.md", content_hash="h", chunk_count=1,
                          updated_at=now)
    outcomes = HelpOutcomes(db)
    for n, (arm, by) in enumerate([(SIFT, BY_SIFT), (SIFT, BY_SIFT), (SIFT, ""),
                                   (HOLDOUT, BY_PERSON), (HOLDOUT, "")]):
        outcomes.asked("slack", "C0HELPDESK", f"9.{n}", "U0ASKER1", arm,
                       at=now - timedelta(days=2))
        if by:
            outcomes.resolved("slack", "C0HELPDESK", f"9.{n}", by, "U0ASKER1")


@pytest.fixture
def week(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_slack: FakeSlack) -> Database:
    url = f"sqlite:///{tmp_path / 'sift.db'}"
    db = Database(url)
    db.upgrade()
    seed(db)
    for name, value in {
            "SIFT_DATABASE_URL": url, "SIFT_DATA_DIR": str(tmp_path / "data"),
            "SIFT_SLACK_BOT_TOKEN": BOT_TOKEN, "SIFT_SLACK_API_URL": fake_slack.api_url,
            "SIFT_ANSWERS__DIGEST_TO": KNOWLEDGE, "SIFT_LOG_LEVEL": "WARNING",
            "SIFT_SOURCES": json.dumps([{"name": "handbook", "kind": "folder",
                                          "path": str(tmp_path), "review_days": 30}])}.items():
        monkeypatch.setenv(name, value)
    return db


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(args))
    return code, out.getvalue()


async def test_the_digest_is_posted_with_the_weeks_figures(week: Database,
                                                            fake_slack: FakeSlack) -> None:
    import asyncio

    code, said = await asyncio.to_thread(run, "digest", "--post")
    assert (code, said.strip()) == (0, f"Posted the digest to {KNOWLEDGE}.")
    [posted] = fake_slack.posted(KNOWLEDGE)
    text = json.dumps(posted["blocks"], ensure_ascii=False)
    # 3 unanswered and 2 voted down this week; the two parking questions are one topic
    assert "5 question(s) went unanswered or got a 👎" in text
    assert "Lisbon office? (2×)" in text and "third floor? (1×)" in text
    assert "conference travel" not in text  # twelve days ago
    assert "*Answers waiting for review*: 2" in text
    down = text.index("staging database credentials? (2 👎)")
    assert down < text.index("holiday policy? (1 👎)") and "VPN" not in text
    assert "*Documents past their review date*: 1 document(s)" in text
    assert "old-runbook.md (handbook)" in text and "fresh.md" not in text
    assert "with Sift: 67% of 3 resolved" in text
    assert "without Sift (the holdout): 50% of 2 resolved" in text


def test_posting_without_a_channel_is_one_sentence(week: Database,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIFT_ANSWERS__DIGEST_TO")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["digest", "--post"])
    assert code != 0
    assert "set [answers] digest_to" in err.getvalue()
