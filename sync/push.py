"""Push notifications: the request a platform sends, the reply, and the receiver contract."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from rag.safe_compare import as_bytes


@dataclass(frozen=True)
class PushRequest:
    """One HTTP call to `/sync/hooks/<source>`, untouched: `body` is the raw bytes the
    platform signed. `sift serve` gives header names in lower case; `header()` accepts any."""

    method: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    body: bytes

    def header(self, name: str) -> str:
        """The header's value ("" when absent), whatever the case of its name."""
        wanted = name.lower()
        for key, value in self.headers.items():
            if key.lower() == wanted:
                return value
        return ""


@dataclass(frozen=True)
class PushReply:
    """What to answer the platform, and what to sync: `doc_ids` (the connector's own ids) now,
    or `resync` (the platform said "something changed" without saying what): an incremental
    run of the source. A reply with neither (a handshake, an event Sift ignores) syncs nothing."""

    status: int = 202
    body: str = ""
    content_type: str = "text/plain"
    doc_ids: tuple[str, ...] = ()
    resync: bool = False
    # A signature that covers a timestamp: the same one twice within `replay_ttl_s` is a
    # replay (the platform signs each notification anew), refused before anything syncs.
    replay_key: str = ""
    replay_ttl_s: float = 0.0

    def once(self, signature: str, tolerance_s: float) -> PushReply:
        """This reply, good once: a signed time may be `tolerance_s` away either way."""
        return replace(self, replay_key=signature.strip(), replay_ttl_s=2 * tolerance_s)


class MalformedBody(Exception):
    """A verified call whose body is not what the platform sends (not JSON): the route
    answers 400 with one sentence, the same for every receiver."""


def json_body(body: bytes) -> Any:
    """The verified body as JSON; MalformedBody when it is not."""
    try:
        return json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise MalformedBody("the body is not JSON") from None


class PushRejected(Exception):
    """The call is not from the platform (no, or a wrong, signature; a stale timestamp): the
    route answers 401 and changes nothing. The message goes to the log, never to the caller,
    and must not contain the secret."""


class PushReceiver(Protocol):
    """One source's webhook endpoint: verify, then say what changed. Must not block long (it
    runs on the event loop); the sync itself happens later, in the background."""

    def receive(self, request: PushRequest) -> PushReply: ...


# --- Verification helpers shared by the receivers ------------------------------------------

Clock = Callable[[], float]
DEFAULT_TOLERANCE_S = 300.0  # how old a signed timestamp may be: bounds replays


def hmac_sha256(secret: str, message: bytes) -> bytes:
    return hmac.new(secret.encode(), message, hashlib.sha256).digest()


def require_secret(secret: str | None, setting: str) -> str:
    """The verifying secret, or PushRejected naming the setting that would hold it."""
    if not secret:
        raise PushRejected(f"no {setting} is set: every notification is refused until it is")
    return secret


def check_hex(expected: bytes, given: str, what: str) -> None:
    """A hex digest (an optional "sha256=" prefix allowed), compared in constant time."""
    digest = given.strip().removeprefix("sha256=")
    if not digest:
        raise PushRejected(f"no {what} header")
    if not hmac.compare_digest(expected.hex().encode(), as_bytes(digest.lower())):
        raise PushRejected(f"the {what} does not match the body")


def check_base64(expected: bytes, given: str, what: str) -> None:
    if not given.strip():
        raise PushRejected(f"no {what} header")
    if not hmac.compare_digest(base64.b64encode(expected), as_bytes(given.strip())):
        raise PushRejected(f"the {what} does not match the body")


def check_fresh(stamp_s: float, tolerance_s: float, clock: Clock = time.time) -> None:
    """A signed time too far from now (either way) is a replay, or a clock to fix."""
    skew = abs(clock() - stamp_s)
    if skew > tolerance_s:
        raise PushRejected(f"the signed timestamp is {skew:.0f}s away from this machine's "
                           f"clock (over {tolerance_s:g}s): refused as a possible replay")


HUB_SIGNATURE = "X-Hub-Signature"  # Atlassian Data Center and Jira admin webhooks


def hub_signed_event(request: PushRequest, secret: str | None, setting: str,
                     tolerance_s: float, clock: Clock = time.time) -> dict[str, Any]:
    """The JSON object of an Atlassian-style webhook: the body signed with HMAC-SHA256 in
    X-Hub-Signature (`sha256=<hex>`), carrying its own `timestamp` in milliseconds, which
    bounds replays. PushRejected (or MalformedBody) for anything else."""
    key = require_secret(secret, setting)
    check_hex(hmac_sha256(key, request.body), request.header(HUB_SIGNATURE), HUB_SIGNATURE)
    event = json_body(request.body)
    if not isinstance(event, dict) or not isinstance(event.get("timestamp"), int | float):
        raise PushRejected("the signed body has no timestamp: refused as a possible replay")
    check_fresh(event["timestamp"] / 1000, tolerance_s, clock)
    return event
