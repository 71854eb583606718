"""Teams channels as a source, kept current by Graph's change notifications: an edit and a
deletion notified at /sync/hooks/<source> change the real Weaviate index within 5 s through
`sift serve`; a notification without the subscription's clientState changes nothing."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from tests.permissions.test_canary_teams_channels import (  # noqa: F401 (fixtures)
    CLIENT_STATE,
    HELP,
    IT,
    SOURCE,
    TEAM_MARK,
    Tenant,
    served_fixture,
    synced_fixture,
)
from tests.scenarios.stack import ServedSift

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
NEW_MARK = "CANARY-TMSNEW-Q3V7"
HEADERS = {"Content-Type": "application/json; charset=utf-8"}


async def texts(synced: Tenant) -> str:
    hits = await synced.index.search("server room door code", None, alpha=0.0, limit=20)
    return " ".join(h.chunk.text for h in hits if h.chunk.source == SOURCE)


async def within(seconds: float, synced: Tenant, check: str, present: bool) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if (check in await texts(synced)) is present:
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise AssertionError(f"{check!r} {'never arrived' if present else 'never left'} in "
                         f"{seconds:g} s")


def notification(resource: str, client_state: str = CLIENT_STATE) -> bytes:
    return json.dumps({"value": [{
        "subscriptionId": "76222963-cc7b-42d2-882d-8aaa69cb2ba3", "changeType": "updated",
        "clientState": client_state, "tenantId": "tenant-1",
        "subscriptionExpirationDateTime": "2026-12-02T10:00:00.0000000Z",
        "resource": resource, "resourceData": {"@odata.type": "#Microsoft.Graph.chatMessage",
                                               "@odata.id": resource}}]}).encode()


async def test_an_edit_and_a_deletion_reach_the_index_within_five_seconds(
        served: ServedSift, synced: Tenant) -> None:
    assert TEAM_MARK in await texts(synced)
    channel = synced.graph.teams[IT].channels[HELP]
    root = channel.roots[0]["id"]
    [reply] = [r["id"] for r in channel.replies[root]]
    synced.graph.edit(IT, HELP, reply, f"<p>The door code changed: it is {NEW_MARK} now.</p>")
    where = f"teams('{IT}')/channels('{HELP}')/messages('{root}')/replies('{reply}')"
    status, _ = await served.post(f"/sync/hooks/{SOURCE}", data=notification(where, "a guess"),
                                  headers=HEADERS)
    assert status in (401, 403)  # not the subscription's clientState: nothing syncs
    await asyncio.sleep(1.0)
    assert NEW_MARK not in await texts(synced)
    status, _ = await served.post(f"/sync/hooks/{SOURCE}", data=notification(where),
                                  headers=HEADERS)
    assert status == 202
    await within(5.0, synced, NEW_MARK, present=True)
    assert TEAM_MARK not in await texts(synced)  # the old version went with it
    synced.graph.delete(IT, HELP, root)
    where = f"teams('{IT}')/channels('{HELP}')/messages('{root}')"
    status, _ = await served.post(f"/sync/hooks/{SOURCE}", data=notification(where),
                                  headers=HEADERS)
    assert status == 202
    await within(5.0, synced, NEW_MARK, present=False)
