"""Graph change notifications for Teams channel messages: the handshake, the clientState
check against the attacker's notifications, the threads they name; and `fetch` reading
exactly those threads from the fake Graph."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr

from sync.connectors.base import DocumentGone, SourceDocument
from sync.connectors.teams_push import TeamsReceiver
from sync.push import PushRejected, PushRequest
from tests.fakes.teams_graph import FakeTeamsGraph
from tests.sync.test_teams import BEN, GENERAL, HELP, IT, VAULT, Tenant, connector, tenant

STATE = "teams-client-state-5d1e"
TEAM = "0f4e2a7c-1b1d-4b7e-9a52-3e1c8d6b2f10"


@pytest.fixture
async def graph() -> AsyncIterator[FakeTeamsGraph]:
    server = FakeTeamsGraph()
    await server.start()
    yield server
    await server.stop()


def notification(resource: str, client_state: str = STATE, **extra: Any) -> dict[str, Any]:
    """A changeNotification without resource data, as Graph posts it for chatMessage."""
    return {"subscriptionId": "76222963-cc7b-42d2-882d-8aaa69cb2ba3", "changeType": "updated",
            "clientState": client_state, "tenantId": "tenant-1",
            "subscriptionExpirationDateTime": "2026-12-02T10:00:00.0000000Z",
            "resource": resource, "resourceData": {"id": resource.rsplit("'", 2)[-2],
                                                   "@odata.type": "#Microsoft.Graph.chatMessage",
                                                   "@odata.id": resource}, **extra}


def request(*notifications: dict[str, Any], query: dict[str, str] | None = None
            ) -> PushRequest:
    body = json.dumps({"value": list(notifications)}).encode() if notifications else b""
    return PushRequest("POST", {"content-type": "application/json"}, query or {}, body)


def receiver(secret: str | None = STATE) -> TeamsReceiver:
    return TeamsReceiver(SecretStr(secret) if secret else None)


def test_the_validation_handshake_echoes_the_token() -> None:
    token = "Validation: Testing client application reachability for subscription"
    reply = receiver().receive(request(query={"validationToken": token}))
    assert (reply.status, reply.body, reply.content_type) == (200, token, "text/plain")
    assert not reply.doc_ids and not reply.resync


def test_notifications_name_the_threads_of_posts_and_replies() -> None:
    post = f"teams('{TEAM}')/channels('{HELP}')/messages('1767000001000')"
    reply = receiver().receive(request(
        notification(post), notification(post + "/replies('1767000009000')"),
        notification(f"teams('{TEAM}')/channels('{VAULT}')/messages('1767000002000')"
                     "/replies('1767000003000')")))
    assert reply.status == 202 and not reply.resync
    assert reply.doc_ids == (f"{HELP}/1767000001000", f"{VAULT}/1767000002000")


@pytest.mark.parametrize("forged", [
    notification(f"teams('{TEAM}')/channels('{HELP}')/messages('1')", client_state="a guess"),
    notification(f"teams('{TEAM}')/channels('{HELP}')/messages('1')", client_state=""),
    notification("users('u1')/chats('19:x@unq.gbl.spaces')/messages('1')"),  # not a channel
    notification(f"teams('{TEAM}')/channels('{HELP}')/messages('../../x')"),
])
def test_the_attackers_notifications_are_refused_whole(forged: dict[str, Any]) -> None:
    good = notification(f"teams('{TEAM}')/channels('{HELP}')/messages('1767000001000')")
    with pytest.raises(PushRejected):
        receiver().receive(request(good, forged))


def test_without_a_client_state_everything_is_refused() -> None:
    with pytest.raises(PushRejected, match=r"teams\.client_state"):
        receiver(None).receive(request(notification(
            f"teams('{TEAM}')/channels('{HELP}')/messages('1')")))
    for body in (b"", b"not json", b'{"value": []}', b'{"value": [1]}'):
        with pytest.raises(PushRejected):
            receiver().receive(PushRequest("POST", {}, {}, body))


def test_a_missed_lifecycle_event_asks_for_an_incremental_run() -> None:
    missed = {"subscriptionId": "s", "clientState": STATE, "lifecycleEvent": "missed"}
    removed = {"subscriptionId": "s", "clientState": STATE,
               "lifecycleEvent": "subscriptionRemoved"}
    assert receiver().receive(request(missed)).resync
    assert not receiver().receive(request(removed)).resync


async def test_fetch_reads_the_named_threads_and_says_which_are_gone(
        graph: FakeTeamsGraph) -> None:
    ids: Tenant = tenant(graph)
    graph.edit(IT, HELP, ids.vpn, "<p>How do I reach the staging VPN from home?</p>")
    graph.delete(IT, HELP, ids.long)
    general = graph.post(IT, GENERAL, BEN, "<p>" + "Lunch is at noon on Fridays. " * 9 + "</p>")
    found = [d async for d in connector(graph).fetch([
        f"{HELP}/{ids.vpn}", f"{HELP}/{ids.long}", f"{HELP}/{ids.short}",
        f"{GENERAL}/{general}", f"{HELP}/1999", f"{VAULT}/{ids.vault}"])]
    assert isinstance(found[0], SourceDocument) and "from home" in found[0].title
    assert found[1] == DocumentGone(f"{HELP}/{ids.long}")  # deleted in Teams
    assert found[2] == DocumentGone(f"{HELP}/{ids.short}")  # too short to stand alone
    # #General is not this source's channel: passed over, not removed from another source
    assert found[3] == DocumentGone(f"{HELP}/1999")  # Graph has no such post
    assert isinstance(found[4], SourceDocument) and found[4].doc_id == f"{VAULT}/{ids.vault}"
    assert len(found) == 5
