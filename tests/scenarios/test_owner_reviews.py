"""Owners keep documents true, through `sift serve` with fake Slack: reminded at start of what
is due or past review, their keep / retire buttons (a forged click refused), an answer citing
an expired document saying so, and a 👎 on an answer citing an owned document told to its
owner."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.answers.owners import KEEP_ACTION, RETIRE_ACTION
from bot.settings import SourceSettings
from storage.columns import utc_now
from storage.db import Database
from storage.models import AuditEntry, DocumentOverride, DocumentStats, Feedback, Interaction
from storage.sync_state import SyncStateRepository
from tests.fakes.slack_payloads import BOT_USER, CHANNEL, USER, block_action, button_action
from tests.fakes.slack_server import Call
from tests.scenarios.sift_cli import cli_settings, sift
from tests.scenarios.slack_stack import Serve, SlackSift

pytestmark = pytest.mark.weaviate

OWNER = "U0OWNER1"
OWNER_DM = "D0OWNER1"  # the app's DM with the owner, where chat.postMessage put them
QUESTION = "How do I rotate the staging database credentials?"
WIKI = "https://wiki.example.com/ops/staging-credentials"


def seed(tmp_path: Path) -> None:
    """The handbook's documents as its last sync saw them (the corpus is loaded directly):
    one changed 100 days ago (past 30 days' review), one 20 days ago (due within 14), one
    today."""
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()
    state, now = SyncStateRepository(db), utc_now()
    for doc_id, age in (("staging-creds", 100), ("holidays", 20), ("vpn", 0)):
        state.record_document("handbook", doc_id, content_hash="h", chunk_count=1,
                              updated_at=now - timedelta(days=age))
    with db.write() as session:
        session.add(DocumentStats(doc_id="staging-creds", title="Rotating staging credentials",
                                  url=WIKI, first_seen=now, last_seen=now))
    db.dispose()


async def served(make_served: Serve, tmp_path: Path) -> SlackSift:
    (tmp_path / "kb").mkdir()
    seed(tmp_path)
    handbook = SourceSettings(name="handbook", kind="folder", path=tmp_path / "kb",
                              owner=OWNER, review_days=30)
    return await make_served(sources=[handbook])


def to_owner(s: SlackSift) -> list[Call]:
    return [c for c in s.slack.calls_to("chat.postMessage") if c.args["channel"] == OWNER]


async def owner_messages(s: SlackSift, count: int) -> list[Call]:
    for _ in range(400):
        if len(to_owner(s)) >= count:
            return to_owner(s)
        await asyncio.sleep(0.025)
    raise AssertionError(f"expected {count} messages to the owner; saw {len(to_owner(s))}")


def buttons(call: Call) -> list[dict[str, Any]]:
    blocks = call.args["blocks"]
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def body(call: Call) -> str:
    return json.dumps(call.args["blocks"])


async def updated_with(s: SlackSift, count: int) -> str:
    return body((await s.slack.wait_for("chat.update", count))[count - 1])


def rows(s: SlackSift, model: Any) -> list[Any]:
    with s.sift.app.database.read() as session:
        return list(session.scalars(select(model)))


async def test_owners_are_reminded_and_keep_or_retire_with_their_buttons(
        make_served: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await served(make_served, tmp_path)
    # `sift reviews` below reads the same handbook source from its environment
    monkeypatch.setenv("SIFT_SOURCES", json.dumps([
        {"name": "handbook", "kind": "folder", "path": str(tmp_path / "kb"), "owner": OWNER,
         "review_days": 30}]))
    reminders = await owner_messages(s, 2)
    await asyncio.sleep(0.3)
    assert len(to_owner(s)) == 2  # the fresh document is not due: nobody is bothered
    by_doc = {b["value"].split("\t")[1]: (call, b) for call in reminders for b in buttons(call)
              if "value" in b}
    assert set(by_doc) == {"staging-creds", "holidays"}
    staging, _ = by_doc["staging-creds"]
    assert "Rotating staging credentials" in body(staging) and "was due for review" in body(staging)
    assert [(b.get("action_id", "").startswith("sift_notice_link"), b.get("url"))
            for b in buttons(staging)] == [(False, None), (True, WIKI), (False, None)]
    holidays, _ = by_doc["holidays"]
    assert "is due for review by" in body(holidays)

    # Until its owner confirms it, an answer citing the expired document says so.
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1764900000.000100")
    answer = await s.answer_in(CHANNEL, 3)
    assert "has never been verified" in body(answer) or "was last verified on" in body(answer)

    keep = "handbook\tstaging-creds"
    staging_ts, holidays_ts = (next(m["ts"] for m in s.slack.posted(OWNER_DM)
                                    if doc in json.dumps(m["blocks"]))
                               for doc in ("staging-creds", "holidays"))
    # Someone else's click on the owner's button (a forged one) changes nothing.
    await s.driver.click(button_action(KEEP_ACTION, keep, message_ts=staging_ts,
                                       channel=OWNER_DM,
                                       user=USER))
    assert "Only the owner" in await updated_with(s, 1)
    with cli_settings(s.sift, monkeypatch):
        _, listed = await sift("reviews", "list", "--json")
    assert {d["doc_id"]: d["state"] for d in listed} == {"staging-creds": "expired",
                                                        "holidays": "due"}
    await s.driver.click(button_action(KEEP_ACTION, keep, message_ts=staging_ts,
                                       channel=OWNER_DM,
                                       user=OWNER))
    assert "Kept" in await updated_with(s, 2)
    with cli_settings(s.sift, monkeypatch):
        _, listed = await sift("reviews", "list", "--state", "all", "--json")
    staged = next(d for d in listed if d["doc_id"] == "staging-creds")
    assert (staged["state"], staged["verified_by"]) == ("verified", f"slack:{OWNER}")

    await s.driver.click(button_action(RETIRE_ACTION, "handbook\tholidays", message_ts=holidays_ts,
                                       channel=OWNER_DM, user=OWNER))
    assert "Retired" in await updated_with(s, 3)
    hidden = await asyncio.to_thread(rows, s, DocumentOverride)
    assert [(o.doc_id, o.kind, o.set_by) for o in hidden] == \
        [("holidays", "hide", f"slack:{OWNER}")]
    actions = {(a.action, a.target, a.actor) for a in await asyncio.to_thread(rows, s, AuditEntry)}
    assert {("document_verified", "handbook:staging-creds", f"slack:{OWNER}"),
            ("document_retired", "handbook:holidays", f"slack:{OWNER}")} <= actions


async def test_a_thumbs_down_on_an_answer_citing_an_owned_document_tells_its_owner(
        make_served: Serve, tmp_path: Path) -> None:
    s = await served(make_served, tmp_path)
    await owner_messages(s, 2)  # the start-up reminders
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1764900000.000100")
    await s.answer_in(CHANNEL, 3)
    answer_ts = s.slack.posted(CHANNEL)[0]["ts"]
    [asked] = await s.rows(Interaction, 1, message_ref=answer_ts)
    await s.driver.click(block_action("up", message_ts=answer_ts, thread_ts="1764900000.000100"))
    await s.rows(Feedback, 1, vote=1)
    await asyncio.sleep(0.3)
    assert len(to_owner(s)) == 2  # a 👍 is nothing to tell
    await s.driver.click(block_action("down", message_ts=answer_ts,
                                      thread_ts="1764900000.000100"))
    [told] = (await owner_messages(s, 3))[2:]
    assert "marked an answer citing *Rotating the staging database credentials*" in body(told)
    assert QUESTION not in body(told)  # the question may come from a channel the owner is not in
    assert asked.status == "answered"
