"""Which thread a message event changed, from the Events API payloads docs.slack.dev shows."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack.channel_events import ThreadChanged, changed_thread
from bot.slack.inbound import Me
from tests.fakes.slack_payloads import BOT_ID, BOT_USER, envelope

ME = Me(BOT_USER, BOT_ID)
ROOT, REPLY = "1355517523.000005", "1355517600.000007"


def edited(message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "subtype": "message_changed", "hidden": True,
            "channel": "C123ABC456", "ts": "1358878755.000001", "event_ts": "1358878755.000001",
            "channel_type": "channel", "message": {"type": "message", **message,
                                                  "edited": {"user": "U1", "ts": "1358878755.0"}},
            "previous_message": {"type": "message", **message, "text": "before"}}


CASES = [
    ("a new message", {"type": "message", "channel": "C123ABC456", "user": "U1", "text": "hi",
                       "ts": ROOT, "channel_type": "channel"}, ThreadChanged("C123ABC456", ROOT)),
    ("a reply", {"type": "message", "channel": "C123ABC456", "user": "U1", "text": "hi",
                 "ts": REPLY, "thread_ts": ROOT, "channel_type": "channel"},
     ThreadChanged("C123ABC456", ROOT)),
    ("an edited reply", edited({"user": "U1", "text": "after", "ts": REPLY, "thread_ts": ROOT}),
     ThreadChanged("C123ABC456", ROOT)),
    ("an edited root", edited({"user": "U1", "text": "after", "ts": ROOT}),
     ThreadChanged("C123ABC456", ROOT)),
    ("a deleted reply", {"type": "message", "subtype": "message_deleted", "hidden": True,
                         "channel": "C123ABC456", "ts": "1358878755.000001",
                         "deleted_ts": REPLY, "channel_type": "channel",
                         "previous_message": {"type": "message", "user": "U1", "text": "x",
                                              "ts": REPLY, "thread_ts": ROOT}},
     ThreadChanged("C123ABC456", ROOT)),
    ("a deleted message, no previous", {"type": "message", "subtype": "message_deleted",
                                        "hidden": True, "channel": "C123ABC456",
                                        "ts": "1358878755.000001", "deleted_ts": ROOT},
     ThreadChanged("C123ABC456", ROOT)),
    ("Sift's streamed answer", edited({"user": BOT_USER, "bot_id": BOT_ID, "text": "more",
                                       "ts": REPLY, "thread_ts": ROOT}), None),
    ("Sift's own reply", {"type": "message", "channel": "C123ABC456", "user": BOT_USER,
                          "bot_id": BOT_ID, "text": "answer", "ts": REPLY, "thread_ts": ROOT},
     None),
    ("a join", {"type": "message", "subtype": "channel_join", "channel": "C123ABC456",
                "user": "U1", "text": "<@U1> has joined the channel", "ts": ROOT}, None),
    ("a DM", {"type": "message", "channel": "D024BE91L", "user": "U1", "text": "hi",
              "ts": ROOT, "channel_type": "im"}, None),
    ("a group DM", {"type": "message", "channel": "G024BE91L", "user": "U1", "text": "hi",
                    "ts": ROOT, "channel_type": "mpim"}, None),
]


@pytest.mark.parametrize(("event", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_the_thread_an_event_touched(event: dict[str, Any],
                                     expected: ThreadChanged | None) -> None:
    assert changed_thread(envelope(event), ME) == expected


def test_the_document_id_is_the_connectors() -> None:
    assert ThreadChanged("C1", ROOT).doc_id == f"C1:{ROOT}"
