"""Each platform's webhook receiver, with the platform's request and with an attacker's."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from sync.connectors.confluence_push import ConfluenceReceiver
from sync.connectors.http_push import SignedWebhookReceiver, signature
from sync.connectors.zendesk_push import ZendeskReceiver
from sync.push import MalformedBody, PushReceiver, PushRejected, PushReply, PushRequest
from tests.fakes.zendesk_server import WEBHOOK_SECRET, article_event, signed

NOW = datetime(2026, 11, 24, 18, 0, tzinfo=UTC)
SECRET = "correct horse battery staple"


def clock() -> float:
    return NOW.timestamp()


def post(body: bytes, headers: dict[str, str]) -> PushRequest:
    return PushRequest("POST", {k.lower(): v for k, v in headers.items()}, {}, body)


# --- Zendesk: base64(HMAC-SHA256(secret, timestamp + body)) -----------------------------------

def zendesk(secret: str | None = WEBHOOK_SECRET) -> ZendeskReceiver:
    return ZendeskReceiver(SecretStr(secret) if secret else None, 300, clock)


def test_zendesk_article_event_names_the_article() -> None:
    body = article_event("published", 42, NOW)
    reply = zendesk().receive(post(body, signed(body, when=NOW)))
    assert (reply.status, reply.doc_ids, reply.resync) == (202, ("42",), False)


def test_a_signed_notification_is_good_once() -> None:
    """The receivers whose signature covers a time name it as the reply's replay key, kept
    for the whole window a signed time is accepted in (before and after now)."""
    body = article_event("published", 42, NOW)
    headers = signed(body, when=NOW)
    reply = zendesk().receive(post(body, headers))
    assert reply.replay_key == headers["X-Zendesk-Webhook-Signature"]
    assert reply.replay_ttl_s == 600
    page = confluence_event("page_updated", 1001)
    reply = confluence().receive(post(page, hub(page)))
    assert reply.replay_key == hub(page)["X-Hub-Signature"] and reply.replay_ttl_s == 600


def test_zendesk_ignores_votes_and_other_domains() -> None:
    for body in (article_event("vote_created", 42, NOW),
                 json.dumps({"type": "zen:event-type:user.active_changed",
                             "detail": {"id": "7"}}).encode()):
        reply = zendesk().receive(post(body, signed(body, when=NOW)))
        assert (reply.status, reply.doc_ids) == (202, ())


def _zendesk_attacks() -> dict[str, tuple[ZendeskReceiver, PushRequest]]:
    body = article_event("published", 42, NOW)
    good = signed(body, when=NOW)
    stale = signed(body, when=NOW - timedelta(minutes=6))
    early = signed(body, when=NOW + timedelta(minutes=6))
    return {
        "unsigned": (zendesk(), post(body, {})),
        "no timestamp": (zendesk(), post(body, {k: v for k, v in good.items()
                                               if not k.endswith("Timestamp")})),
        "wrong signature": (zendesk(), post(body, {**good, "X-Zendesk-Webhook-Signature":
                                                   base64.b64encode(b"x" * 32).decode()})),
        "tampered body": (zendesk(), post(article_event("published", 43, NOW), good)),
        "replayed timestamp": (zendesk(), post(body, stale)),
        "timestamp from the future": (zendesk(), post(body, early)),
        "another source's secret": (zendesk("the other desk's secret"), post(body, good)),
        "no secret configured": (zendesk(None), post(body, good)),
    }


@pytest.mark.parametrize("attack", list(_zendesk_attacks()))
def test_zendesk_refuses(attack: str) -> None:
    receiver, request = _zendesk_attacks()[attack]
    with pytest.raises(PushRejected) as caught:
        receiver.receive(request)
    assert WEBHOOK_SECRET not in str(caught.value)


# --- Confluence Data Center: X-Hub-Signature = sha256=hex(HMAC-SHA256(secret, body)) ----------

def confluence_event(event: str, page: int, when: datetime = NOW) -> bytes:
    """A Data Center webhook body: event name, milliseconds, and the page it is about."""
    return json.dumps({"timestamp": int(when.timestamp() * 1000), "event": event,
                       "userAccountId": "ff808181", "page": {
                           "id": page, "spaceKey": "ENG", "title": "Rotating keys",
                           "contentType": "page", "version": 3,
                           "self": f"https://wiki.example/pages/viewpage.action?pageId={page}",
                           "creationDate": 1700000000000,
                           "modificationDate": int(when.timestamp() * 1000)}}).encode()


def hub(body: bytes, secret: str = SECRET) -> dict[str, str]:
    return {"X-Hub-Signature": "sha256=" + hmac.new(secret.encode(), body,
                                                    hashlib.sha256).hexdigest()}


def confluence(secret: str | None = SECRET) -> ConfluenceReceiver:
    return ConfluenceReceiver(SecretStr(secret) if secret else None, 300, clock)


def test_confluence_page_event_names_the_page() -> None:
    body = confluence_event("page_updated", 1001)
    assert confluence().receive(post(body, hub(body))).doc_ids == ("1001",)
    other = json.dumps({"timestamp": int(NOW.timestamp() * 1000), "event": "space_created",
                        "space": {"key": "NEW"}}).encode()
    assert confluence().receive(post(other, hub(other))).doc_ids == ()


def _confluence_attacks() -> dict[str, tuple[ConfluenceReceiver, PushRequest]]:
    body = confluence_event("page_removed", 1001)
    old = confluence_event("page_removed", 1001, NOW - timedelta(hours=1))
    return {
        "unsigned": (confluence(), post(body, {})),
        "wrong signature": (confluence(), post(body, hub(body, "guess"))),
        "tampered body": (confluence(), post(confluence_event("page_removed", 1002),
                                             hub(body))),
        "replayed timestamp": (confluence(), post(old, hub(old))),
        "another source's secret": (confluence("other wiki"), post(body, hub(body))),
        "no secret configured": (confluence(None), post(body, hub(body))),
    }


@pytest.mark.parametrize("attack", list(_confluence_attacks()))
def test_confluence_refuses(attack: str) -> None:
    receiver, request = _confluence_attacks()[attack]
    with pytest.raises(PushRejected):
        receiver.receive(request)


# --- The generic signed webhook: sha256=hex(HMAC(secret, "<ts>.<body>")) ---------------------

def sift_signed(body: bytes, when: datetime = NOW, secret: str = SECRET) -> dict[str, str]:
    stamp = str(int(when.timestamp()))
    return {"X-Sift-Timestamp": stamp, "X-Sift-Signature": signature(secret, stamp, body)}


def generic(by_id: bool = True, secret: str | None = SECRET) -> SignedWebhookReceiver:
    return SignedWebhookReceiver(SecretStr(secret) if secret else None, 300, by_id, clock)


CASES: list[tuple[str, Callable[[], PushReceiver], bytes, PushReply]] = [
    ("ids", generic, b'{"ids": ["a-1", 7, "a-1"]}', PushReply(202, "Queued.",
                                                            doc_ids=("a-1", "7"))),
    ("no ids", generic, b"{}", PushReply(202, "Queued: an incremental sync.", resync=True)),
    ("no item_path", lambda: generic(by_id=False), b'{"ids": ["a-1"]}',
     PushReply(202, "Queued: an incremental sync.", resync=True)),
    ("bad ids", generic, b'{"ids": "a-1"}',
     PushReply(400, 'The body\'s "ids" must be a list of strings.')),
]


@pytest.mark.parametrize(("name", "make", "body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_generic_webhook(name: str, make: Callable[[], PushReceiver], body: bytes,
                         expected: PushReply) -> None:
    headers = sift_signed(body)
    if expected.status == 202:  # taken once: its signature, for twice the 300 s tolerance
        expected = replace(expected, replay_key=headers["X-Sift-Signature"], replay_ttl_s=600)
    assert make().receive(post(body, headers)) == expected


def _generic_attacks() -> dict[str, tuple[SignedWebhookReceiver, PushRequest]]:
    body = b'{"ids": ["a-1"]}'
    good = sift_signed(body)
    return {
        "unsigned": (generic(), post(body, {})),
        "no timestamp": (generic(), post(body, {"X-Sift-Signature":
                                                good["X-Sift-Signature"]})),
        "wrong signature": (generic(), post(body, sift_signed(body, secret="guess"))),
        "timestamp moved": (generic(), post(body, {**good, "X-Sift-Timestamp":
                                                   str(int(NOW.timestamp()) + 1)})),
        "replayed timestamp": (generic(), post(body, sift_signed(
            body, NOW - timedelta(minutes=10)))),
        "another source's secret": (generic(secret="other"), post(body, good)),
        "no secret configured": (generic(secret=None), post(body, good)),
    }


@pytest.mark.parametrize("attack", list(_generic_attacks()))
def test_generic_webhook_refuses(attack: str) -> None:
    receiver, request = _generic_attacks()[attack]
    with pytest.raises(PushRejected):
        receiver.receive(request)


def test_header_names_are_matched_whatever_their_case() -> None:
    request = PushRequest("POST", {"X-Hub-Signature": "sha256=ab"}, {}, b"")
    assert request.header("x-hub-signature") == "sha256=ab"
    assert request.header("X-Missing") == ""


def test_every_receiver_says_the_same_of_a_signed_body_that_is_not_json() -> None:
    body = b"{not json"
    calls = [(zendesk(), post(body, signed(body, when=NOW))),
             (confluence(), post(body, hub(body))),
             (generic(), post(body, sift_signed(body)))]
    for receiver, request in calls:
        with pytest.raises(MalformedBody, match="not JSON"):
            receiver.receive(request)
