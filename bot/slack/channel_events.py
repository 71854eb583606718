"""Which channel thread a message event changed (a reply, an edit, a deletion), for the push."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.slack.inbound import Me

# Subtypes whose message may be (part of) an indexed thread; joins and topic changes are not.
SPOKEN = frozenset({"", "thread_broadcast", "file_share", "me_message", "bot_message"})


@dataclass(frozen=True)
class ThreadChanged:
    channel: str
    root_ts: str

    @property
    def doc_id(self) -> str:
        return f"{self.channel}:{self.root_ts}"  # as the Slack connector names its documents


def _str(payload: Any, key: str) -> str:
    value = payload.get(key) if isinstance(payload, dict) else None
    return value if isinstance(value, str) else ""


def changed_thread(body: Mapping[str, Any], me: Me) -> ThreadChanged | None:
    """The thread a `message` event touched in a channel; None for DMs and for Sift's own
    messages (its answers stream in as edits: each would cost a sync for nothing)."""
    event = body.get("event")
    if not isinstance(event, dict):
        return None
    channel, subtype = _str(event, "channel"), _str(event, "subtype")
    if not channel or channel.startswith("D") or _str(event, "channel_type") in ("im", "mpim"):
        return None
    if subtype == "message_changed":
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
    elif subtype == "message_deleted":
        message = event.get("previous_message") if isinstance(
            event.get("previous_message"), dict) else {"ts": _str(event, "deleted_ts")}
    elif subtype in SPOKEN:
        message = event
    else:
        return None
    if (me.bot_id and _str(message, "bot_id") == me.bot_id) or (
            me.user_id and _str(message, "user") == me.user_id):
        return None
    root = _str(message, "thread_ts") or _str(message, "ts")
    return ThreadChanged(channel, root) if root else None
