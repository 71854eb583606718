"""Microsoft Graph change notifications: the validation handshake, then `clientState`-checked
notifications about a drive, each a cue for a delta sync of the source."""

from __future__ import annotations

import hmac
import json
import logging
import time
from datetime import datetime
from typing import Any

from pydantic import SecretStr

from sync.push import Clock, PushRejected, PushReply, PushRequest, require_secret

log = logging.getLogger(__name__)
VALIDATION = "validationToken"
MAX_VALIDATION = 4096  # Graph's tokens are short opaque strings; this bounds the echo
RENEW_WITHIN_S = 24 * 3600  # a subscription expiring sooner than this is worth a warning


class GraphReceiver:
    """The `notificationUrl` of Graph subscriptions on this source's drives (resource
    `drives/{id}/root`, change type `updated`) with `clientState` = `sharepoint.client_state`.
    A driveItem notification names the drive, not the file, so each one means a delta run;
    the deltas of drives that did not change come back empty and cost one request each."""

    def __init__(self, client_state: SecretStr | None, clock: Clock = time.time) -> None:
        self._secret = client_state
        self._clock = clock

    def receive(self, request: PushRequest) -> PushReply:
        if VALIDATION in request.query:
            return _handshake(request.query[VALIDATION])
        secret = require_secret(self._secret.get_secret_value() if self._secret else None,
                                "sharepoint.client_state")
        notifications = _notifications(request.body)
        for n in notifications:  # one forged entry spoils the call: it is refused whole
            given = str(n.get("clientState") or "")
            if not given:
                raise PushRejected("a notification carries no clientState")
            if not hmac.compare_digest(given.encode(), secret.encode()):
                raise PushRejected("a notification's clientState is not sharepoint.client_state")
        resync = False
        for n in notifications:
            resync |= self._wants_sync(n)
        return PushReply(202, "Queued: a delta sync." if resync else "Nothing to sync.",
                         resync=resync)

    def _wants_sync(self, n: dict[str, Any]) -> bool:
        """Change notifications, and a lifecycle `missed` (some were dropped), call for a
        delta run; the other lifecycle events ask the operator to renew the subscription."""
        event = str(n.get("lifecycleEvent") or "")
        subscription = str(n.get("subscriptionId") or "?")
        if event and event != "missed":
            log.warning("Graph subscription %s sent lifecycle event %s: renew or recreate it, "
                        "or pushes stop (the scheduled syncs go on)", subscription, event)
            return False
        self._warn_if_expiring(subscription, n.get("subscriptionExpirationDateTime"))
        return True

    def _warn_if_expiring(self, subscription: str, stamp: Any) -> None:
        try:
            expires = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
        except ValueError:
            return
        if expires - self._clock() < RENEW_WITHIN_S:
            log.warning("Graph subscription %s expires at %s: renew it (PATCH "
                        "/subscriptions/%s) to keep receiving pushes", subscription, stamp,
                        subscription)


def _handshake(token: str) -> PushReply:
    """Graph proves the URL when a subscription is made: the token comes back, as plain text,
    with 200, at once. Nothing is synced, so an unauthenticated echo risks nothing."""
    if not token or len(token) > MAX_VALIDATION:
        return PushReply(400, "The validationToken is empty or too long.")
    return PushReply(200, token, content_type="text/plain")


def _notifications(body: bytes) -> list[dict[str, Any]]:
    """The `value` array of a changeNotificationCollection; anything else is not from Graph."""
    try:
        payload = json.loads(body)
    except ValueError:
        raise PushRejected("the body is not JSON (nor is this a validation request)") from None
    value = payload.get("value") if isinstance(payload, dict) else None
    if not isinstance(value, list) or not value or not all(isinstance(n, dict) for n in value):
        raise PushRejected("the body has no notifications (a `value` array)")
    return value
