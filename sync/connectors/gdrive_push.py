"""Google Drive push channels: the channel token checked, `sync` answered; a `files.watch`
message syncs its file, a `changes.watch` one starts an incremental sync of the source."""

from __future__ import annotations

import hmac
import logging
import re
import time
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from pydantic import SecretStr

from sync.push import Clock, PushRejected, PushReply, PushRequest, require_secret

log = logging.getLogger(__name__)
CHANNEL = "X-Goog-Channel-ID"
TOKEN = "X-Goog-Channel-Token"
STATE = "X-Goog-Resource-State"
EXPIRATION = "X-Goog-Channel-Expiration"
RESOURCE_URI = "X-Goog-Resource-URI"
FILE_PATH = re.compile(r"/drive/v\d+/files/([A-Za-z0-9_-]+)")  # a files.watch channel's file
# `change` is what changes.watch sends; the others come from a files.watch channel.
CHANGED = frozenset({"change", "add", "update", "remove", "trash", "untrash"})
RENEW_WITHIN_S = 24 * 3600


class DriveReceiver:
    """The `address` of a channel opened with `changes.watch` (or `files.watch`) whose `token`
    is `gdrive.channel_token`. Drive's messages have no body and carry no signed time: a
    replayed one costs a sync that finds nothing new."""

    def __init__(self, token: SecretStr | None, channel_id: str = "",
                 clock: Clock = time.time) -> None:
        self._token = token
        self._channel_id = channel_id
        self._clock = clock

    def receive(self, request: PushRequest) -> PushReply:
        secret = require_secret(self._token.get_secret_value() if self._token else None,
                                "gdrive.channel_token")
        channel, given = request.header(CHANNEL).strip(), request.header(TOKEN)
        if not channel:
            raise PushRejected(f"no {CHANNEL} header")
        if not given:
            raise PushRejected(f"no {TOKEN} header")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            raise PushRejected(f"the {TOKEN} is not gdrive.channel_token")
        if self._channel_id and channel != self._channel_id:
            raise PushRejected(f"channel {channel!r} is not gdrive.channel_id")
        state = request.header(STATE).strip().lower()
        if state == "sync":  # the first message of a new channel: nothing changed yet
            return PushReply(200, "Channel open.")
        if state not in CHANGED:
            return PushReply(202, f"Ignored: resource state {state or '(none)'}.")
        self._warn_if_expiring(channel, request.header(EXPIRATION))
        found = FILE_PATH.fullmatch(urlsplit(request.header(RESOURCE_URI).strip()).path)
        if found:
            return PushReply(202, "Queued.", doc_ids=(found.group(1),))
        return PushReply(202, "Queued: an incremental sync.", resync=True)

    def _warn_if_expiring(self, channel: str, stamp: str) -> None:
        try:
            expires = parsedate_to_datetime(stamp).timestamp()
        except (TypeError, ValueError):
            return
        if expires - self._clock() < RENEW_WITHIN_S:
            log.warning("Drive channel %s expires at %s: open a new one (changes.watch) to "
                        "keep receiving pushes", channel, stamp)
