"""Graph's chatMessage JSON for the fake Graph: a message as v1.0 returns it, cards, files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from tests.fakes.entra_server import TENANT

Json = dict[str, Any]
CARD = "application/vnd.microsoft.card.adaptive"


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + \
        f"{ms % 1000:03d}Z"


@dataclass(frozen=True)
class Sent:
    """Who posted what, where and when (`ms`: the message id and its time)."""

    team: str
    channel: str
    ms: int
    reply_to: str | None
    kind: str
    sender: Json | None  # {id, displayName} of a user, or None
    app: Json | None  # {id, displayName} of an app or bot, or None
    html: str
    content_type: str


def _user(who: Json) -> Json:
    return {"@odata.type": "#microsoft.graph.teamworkUserIdentity", "id": who["id"],
            "displayName": who["displayName"], "userIdentityType": "aadUser",
            "tenantId": TENANT}


def chat_message(m: Sent, mentioned: list[Json], attachments: list[Json]) -> Json:
    """`mentioned` users in order: the body's `<at id="n">` is the n-th."""
    message_id = str(m.ms)
    return {
        "@odata.type": "#microsoft.graph.chatMessage",
        "id": message_id, "replyToId": m.reply_to, "etag": message_id,
        "messageType": m.kind, "createdDateTime": iso(m.ms),
        "lastModifiedDateTime": iso(m.ms), "lastEditedDateTime": None,
        "deletedDateTime": None, "subject": None, "summary": None, "chatId": None,
        "importance": "normal", "locale": "en-us",
        "webUrl": (f"https://teams.microsoft.com/l/message/{quote(m.channel, safe='')}/"
                   f"{message_id}?groupId={m.team}&tenantId={TENANT}&createdTime={m.ms}"
                   f"&parentMessageId={m.reply_to or message_id}"),
        "policyViolation": None, "eventDetail": None,
        "from": {"application": None if m.app is None else {
                     "@odata.type": "#microsoft.graph.teamworkApplicationIdentity",
                     "applicationIdentityType": "bot", **m.app},
                 "device": None, "conversation": None,
                 "user": None if m.sender is None else _user(m.sender)},
        "body": {"contentType": m.content_type, "content": m.html},
        "channelIdentity": {"teamId": m.team, "channelId": m.channel},
        "attachments": attachments,
        "mentions": [{"id": n, "mentionText": who["displayName"],
                      "mentioned": {"application": None, "device": None, "conversation": None,
                                    "tag": None, "user": _user(who)}}
                     for n, who in enumerate(mentioned)],
        "reactions": [], "messageHistory": []}


def card(*texts: str) -> Json:
    """An Adaptive Card attachment as a bot posts it (its content a JSON string)."""
    return {"id": "card-1", "contentType": CARD, "contentUrl": None, "name": None,
            "thumbnailUrl": None, "teamsAppId": None, "content": json.dumps({
                "type": "AdaptiveCard", "version": "1.4",
                "body": [{"type": "TextBlock", "text": t, "wrap": True} for t in texts]})}


def file(name: str) -> Json:
    """A file shared in a message: a reference attachment (the body holds its marker)."""
    return {"id": f"file-{name}", "contentType": "reference",
            "contentUrl": f"https://acme.sharepoint.com/sites/it/Shared%20Documents/{name}",
            "content": None, "name": name, "thumbnailUrl": None, "teamsAppId": None}
