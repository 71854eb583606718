"""Graph change notifications for Teams channel messages: the validation handshake, then
`clientState`-checked notifications, each naming the thread whose post or reply changed."""

from __future__ import annotations

import hmac
import json
import logging
import re
from typing import Any

from pydantic import SecretStr

from sync.push import PushRejected, PushReply, PushRequest, require_secret

log = logging.getLogger(__name__)
VALIDATION = "validationToken"
MAX_VALIDATION = 4096  # Graph's tokens are short opaque strings; this bounds the echo
# teams('{team}')/channels('{channel}')/messages('{root}')[/replies('{reply}')]
RESOURCE = re.compile(r"^/?teams\('[^']+'\)/channels\('([^']+)'\)/messages\('(\d+)'\)"
                      r"(?:/replies\('\d+'\))?$")


class TeamsReceiver:
    """The `notificationUrl` of Graph subscriptions on the source's channels (resource
    `/teams/{id}/channels/{id}/messages`, change types created, updated, deleted) with
    `clientState` = `teams.client_state`. A notification names the message; its thread is
    read again (`fetch`). A lifecycle `missed` asks for an incremental run instead."""

    def __init__(self, client_state: SecretStr | None) -> None:
        self._secret = client_state

    def receive(self, request: PushRequest) -> PushReply:
        if VALIDATION in request.query:  # the subscription is being made: echo at once
            token = request.query[VALIDATION]
            if not token or len(token) > MAX_VALIDATION:
                return PushReply(400, "The validationToken is empty or too long.")
            return PushReply(200, token, content_type="text/plain")
        secret = require_secret(self._secret.get_secret_value() if self._secret else None,
                                "teams.client_state")
        notifications = _notifications(request.body)
        for n in notifications:  # one forged entry spoils the call: it is refused whole
            given = str(n.get("clientState") or "")
            if not given or not hmac.compare_digest(given.encode(), secret.encode()):
                raise PushRejected("a notification's clientState is not teams.client_state")
        threads: list[str] = []
        resync = False
        for n in notifications:
            event = str(n.get("lifecycleEvent") or "")
            if event:
                resync |= event == "missed"
                if event != "missed":
                    log.warning("Graph subscription %s sent lifecycle event %s: renew or "
                                "recreate it, or pushes stop (the scheduled syncs go on)",
                                n.get("subscriptionId") or "?", event)
                continue
            found = RESOURCE.match(str(n.get("resource") or ""))
            if found is None:
                raise PushRejected(f"a notification names {n.get('resource')!r}, not a "
                                   "channel message")
            threads.append(f"{found.group(1)}/{found.group(2)}")
        ids = tuple(dict.fromkeys(threads))
        return PushReply(202, f"Queued: {len(ids)} thread(s)." if ids or resync else
                         "Nothing to sync.", doc_ids=ids, resync=resync)


def _notifications(body: bytes) -> list[dict[str, Any]]:
    try:
        parsed = json.loads(body)
    except ValueError:
        raise PushRejected("the body is not JSON") from None
    value = parsed.get("value") if isinstance(parsed, dict) else None
    if not isinstance(value, list) or not value or not all(isinstance(n, dict) for n in value):
        raise PushRejected("the body is not a changeNotificationCollection")
    return value
