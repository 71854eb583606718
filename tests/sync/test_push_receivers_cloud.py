"""Microsoft Graph and Google Drive receivers, with the platform's requests and an attacker's."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from pydantic import SecretStr

from sync.connectors.gdrive_push import DriveReceiver
from sync.connectors.sharepoint_push import GraphReceiver
from sync.push import PushRejected, PushReply, PushRequest
from tests.fakes.push_payloads import (
    DRIVE_CHANNEL_ID,
    DRIVE_CHANNEL_TOKEN,
    GRAPH_CLIENT_STATE,
    drive_message,
    graph_change,
    graph_lifecycle,
)


def call(body: bytes = b"", headers: dict[str, str] | None = None,
         query: dict[str, str] | None = None) -> PushRequest:
    return PushRequest("POST", {k.lower(): v for k, v in (headers or {}).items()},
                       query or {}, body)


# --- Microsoft Graph ------------------------------------------------------------------------

def graph(secret: str | None = GRAPH_CLIENT_STATE) -> GraphReceiver:
    return GraphReceiver(SecretStr(secret) if secret else None)


def test_graph_validation_echoes_the_token_as_plain_text() -> None:
    token = "Validation: Testing client application reachability for subscription Request-Id:"\
            " 9d6b5b3e-1f9a-4c1e-a0f5-6d4b1c2e3f4a"
    for receiver in (graph(), graph(None)):  # made before any secret is checked
        reply = receiver.receive(call(query={"validationToken": token}))
        assert (reply.status, reply.body, reply.content_type) == (200, token, "text/plain")
        assert not reply.doc_ids and not reply.resync
    assert graph().receive(call(query={"validationToken": ""})).status == 400
    assert graph().receive(call(query={"validationToken": "x" * 5000})).status == 400


def test_graph_change_notifications_ask_for_a_delta_sync() -> None:
    reply = graph().receive(call(graph_change("b!lib-1", "b!od-2")))
    assert (reply.status, reply.resync, reply.doc_ids) == (202, True, ())
    assert graph().receive(call(graph_lifecycle("missed"))).resync


def test_graph_lifecycle_events_warn_and_sync_nothing(caplog: pytest.LogCaptureFixture) -> None:
    for event in ("reauthorizationRequired", "subscriptionRemoved"):
        reply = graph().receive(call(graph_lifecycle(event)))
        assert (reply.status, reply.resync) == (202, False)
        assert event in caplog.text


def test_graph_warns_of_a_subscription_about_to_expire(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    graph().receive(call(graph_change("b!lib-1")))
    assert "expires" not in caplog.text
    graph().receive(call(graph_change("b!lib-1", expires=timedelta(hours=3))))
    assert "renew it" in caplog.text


def _graph_attacks() -> dict[str, tuple[GraphReceiver, PushRequest]]:
    good = graph_change("b!lib-1")
    mixed = json.loads(graph_change("b!lib-1"))
    mixed["value"] += json.loads(graph_change("b!od-2", client_state="guess"))["value"]
    bare = json.loads(good)
    del bare["value"][0]["clientState"]
    return {
        "wrong clientState": (graph(), call(graph_change("b!lib-1", client_state="guess"))),
        "no clientState": (graph(), call(json.dumps(bare).encode())),
        "one forged among good ones": (graph(), call(json.dumps(mixed).encode())),
        "lifecycle with a wrong clientState": (graph(), call(graph_lifecycle("missed", "x"))),
        "not JSON": (graph(), call(b"validationToken=abc")),
        "no value array": (graph(), call(b'{"value": []}')),
        "another source's clientState": (graph("another"), call(good)),
        "no clientState configured": (graph(None), call(good)),
    }


@pytest.mark.parametrize("attack", list(_graph_attacks()))
def test_graph_refuses(attack: str) -> None:
    receiver, request = _graph_attacks()[attack]
    with pytest.raises(PushRejected) as caught:
        receiver.receive(request)
    assert GRAPH_CLIENT_STATE not in str(caught.value)


# --- Google Drive ---------------------------------------------------------------------------

def drive(token: str | None = DRIVE_CHANNEL_TOKEN, channel_id: str = "") -> DriveReceiver:
    return DriveReceiver(SecretStr(token) if token else None, channel_id)


@pytest.mark.parametrize(("state", "expected"), [
    ("sync", PushReply(200, "Channel open.")),
    ("change", PushReply(202, "Queued: an incremental sync.", resync=True)),
    ("update", PushReply(202, "Queued: an incremental sync.", resync=True)),
    ("trash", PushReply(202, "Queued: an incremental sync.", resync=True)),
    ("exists", PushReply(202, "Ignored: resource state exists.")),
])
def test_drive_states(state: str, expected: PushReply) -> None:
    assert drive().receive(call(headers=drive_message(state, 2))) == expected
    assert drive(channel_id=DRIVE_CHANNEL_ID).receive(
        call(headers=drive_message(state, 2))) == expected


def test_a_files_watch_message_names_its_file() -> None:
    reply = drive().receive(call(headers=drive_message("update", 3, file="1aBc-D_9")))
    assert (reply.status, reply.doc_ids, reply.resync) == (202, ("1aBc-D_9",), False)
    sync = drive().receive(call(headers=drive_message("sync", 1, file="1aBc-D_9")))
    assert (sync.status, sync.doc_ids) == (200, ())


def test_drive_warns_of_a_channel_about_to_expire(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    drive().receive(call(headers=drive_message("change", 2)))
    assert "expires" not in caplog.text
    drive().receive(call(headers=drive_message("change", 3, expires=timedelta(hours=2))))
    assert "open a new one" in caplog.text


def _drive_attacks() -> dict[str, tuple[DriveReceiver, PushRequest]]:
    good = drive_message("change", 2)
    return {
        "no token": (drive(), call(headers={k: v for k, v in good.items()
                                            if k != "X-Goog-Channel-Token"})),
        "wrong token": (drive(), call(headers=drive_message("change", 2, token="guess"))),
        "token with a suffix": (drive(), call(headers=drive_message(
            "change", 2, token=DRIVE_CHANNEL_TOKEN + "x"))),
        "no channel id": (drive(), call(headers={k: v for k, v in good.items()
                                                 if k != "X-Goog-Channel-ID"})),
        "another channel": (drive(channel_id=DRIVE_CHANNEL_ID),
                            call(headers=drive_message("change", 2, channel="other"))),
        "a forged sync": (drive(), call(headers=drive_message("sync", 1, token="guess"))),
        "another source's token": (drive("another"), call(headers=good)),
        "no token configured": (drive(None), call(headers=good)),
    }


@pytest.mark.parametrize("attack", list(_drive_attacks()))
def test_drive_refuses(attack: str) -> None:
    receiver, request = _drive_attacks()[attack]
    with pytest.raises(PushRejected) as caught:
        receiver.receive(request)
    assert DRIVE_CHANNEL_TOKEN not in str(caught.value)
