"""Slack channels as a source, kept current by the chat's own events: an edit and a deletion
arriving at /slack/events change the real Weaviate index within 5 s through `sift serve`."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.fakes.slack_payloads import envelope, next_event_id
from tests.permissions.test_canary_slack_channels import (  # noqa: F401 (fixtures)
    HELP,
    PUBLIC_MARK,
    SOURCE,
    Workspace,
    served_fixture,
    workspace_fixture,
)
from tests.scenarios.slack_stack import SlackSift

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

ROOT, REPLY = "1767000000.000100", "1767000000.000900"  # the public thread and its answer
NEW_MARK = "CANARY-SLKNEW-H6J8"


async def texts(workspace: Workspace) -> str:
    hits = await workspace.index.search("server room door code", None, alpha=0.0, limit=20)
    return " ".join(h.chunk.text for h in hits if h.chunk.source == SOURCE)


async def within(seconds: float, workspace: Workspace, check: str, present: bool) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if (check in await texts(workspace)) is present:
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise AssertionError(f"{check!r} {'never arrived' if present else 'never left'} in "
                         f"{seconds:g} s")


async def test_an_edit_and_a_deletion_reach_the_index_within_five_seconds(
        served: SlackSift, workspace: Workspace) -> None:
    assert PUBLIC_MARK in await texts(workspace)
    reply = next(m for m in workspace.slack.messages[HELP] if m["ts"] == REPLY)
    before = dict(reply)
    reply.update(text=f"The door code changed: it is {NEW_MARK} now.",
                 edited={"user": "U0BEN", "ts": f"{time.time():.6f}"})
    event = {"type": "message", "subtype": "message_changed", "hidden": True, "channel": HELP,
             "ts": f"{time.time():.6f}", "event_ts": f"{time.time():.6f}",
             "channel_type": "channel", "message": dict(reply), "previous_message": before}
    assert (await served.driver.event(envelope(event, next_event_id()))).status == 200
    await within(5.0, workspace, NEW_MARK, present=True)
    assert PUBLIC_MARK not in await texts(workspace)  # the old version went with it
    workspace.slack.remove(HELP, REPLY)
    workspace.slack.remove(HELP, ROOT)
    gone = {"type": "message", "subtype": "message_deleted", "hidden": True, "channel": HELP,
            "ts": f"{time.time():.6f}", "deleted_ts": ROOT, "channel_type": "channel",
            "previous_message": {"type": "message", "user": "U0ANA", "ts": ROOT,
                                 "text": "What is the door code for the server room?"}}
    assert (await served.driver.event(envelope(gone, next_event_id()))).status == 200
    await within(5.0, workspace, NEW_MARK, present=False)
