"""Activity JSON shaped like what Teams posts to /api/messages (from Microsoft's documented
examples: @mentions in channels and group chats, personal chat, feedback invoke, reactions)."""

from __future__ import annotations

import itertools
import json
from typing import Any

BOT_APP_ID = "b1f4c6a2-7d0e-4c55-9a3e-2f6d8e1c0a77"
BOT_ID = f"28:{BOT_APP_ID}"
BOT_NAME = "Sift"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
TEAM = "19:efa9296d959346209fea44151c742e73@thread.tacv2"
CHANNEL = "19:3629591d4b774aa08cb0887902eee7c1@thread.tacv2"
PERSONAL = "a:1Xyz8f3kQ7uL2mPq9rT4vW6yB0cE5gH1jK3nS7dF9aZ_personal"
GROUP = "19:meeting_group_8c1f2a44e7b94d0f9a1c@thread.v2"
TEAM_GROUP = "5f0b2d3c-8a41-4e9b-b6c7-1d2e3f4a5b6c"  # the team's Entra group id (Graph's id)

_ids = itertools.count(1700000000001)


def next_id() -> str:
    return str(next(_ids))


def user(n: int = 1) -> dict[str, Any]:
    return {"id": f"29:1I9Is_Sx0O-user{n}", "name": f"Jane Smith {n}",
            "aadObjectId": f"c33aafc4-646d-4543-9d4c-abd28e4d21{n:02d}"}


def _base(service_url: str, conversation: dict[str, Any], sender: dict[str, Any],
          activity_id: str | None) -> dict[str, Any]:
    return {
        "id": activity_id or next_id(), "channelId": "msteams",
        "serviceUrl": service_url, "timestamp": "2026-11-22T09:15:41.943Z",
        "localTimestamp": "2026-11-22T10:15:41.943+01:00", "locale": "en-US",
        "from": sender, "recipient": {"id": BOT_ID, "name": BOT_NAME},
        "conversation": conversation,
        "channelData": {"tenant": {"id": TENANT}},
    }


def _client_info() -> dict[str, Any]:
    return {"type": "clientInfo", "locale": "en-US", "country": "US", "platform": "Web",
            "timezone": "Europe/Berlin"}


def channel_conversation(root_id: str) -> dict[str, Any]:
    return {"isGroup": True, "conversationType": "channel", "tenantId": TENANT,
            "id": f"{CHANNEL};messageid={root_id}"}


def channel_mention(service_url: str, question: str, *, activity_id: str | None = None,
                    root_id: str | None = None, sender: dict[str, Any] | None = None,
                    attachments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`@Sift question` in a channel; a new post is its own thread root."""
    activity_id = activity_id or next_id()
    mention = f"<at>{BOT_NAME}</at>"
    payload = _base(service_url, channel_conversation(root_id or activity_id),
                    sender or user(), activity_id)
    payload.update({
        "type": "message", "text": f"{mention} {question}", "textFormat": "plain",
        "entities": [{"type": "mention", "text": mention,
                      "mentioned": {"id": BOT_ID, "name": BOT_NAME}}, _client_info()],
        "channelData": channel_data(),
    })
    if attachments:
        payload["attachments"] = attachments
    return payload


def inline_image(content_url: str) -> list[dict[str, Any]]:
    """A pasted image as Teams attaches it: the image, and the message's HTML copy that shows
    it (learn.microsoft.com, bots: "Send and receive files", inline images)."""
    return [{"contentType": "image/*", "contentUrl": content_url},
            {"contentType": "text/html", "content":
             f'<div><div><span><img height="120" src="{content_url}" width="720" '
             'style="vertical-align:bottom"></span></div></div>'}]


def shared_file(name: str, download_url: str) -> list[dict[str, Any]]:
    """A file shared with the bot, as file.download.info (the same page's example)."""
    return [{"contentType": "application/vnd.microsoft.teams.file.download.info",
             "contentUrl": f"https://contoso.sharepoint.com/personal/u/Documents/{name}",
             "name": name, "content": {"downloadUrl": download_url,
                                       "uniqueId": "1150D938-8870-4044-9F2C-5BBDEBA70C9D",
                                       "fileType": name.rsplit(".", 1)[-1], "etag": "123"}}]


def channel_data() -> dict[str, Any]:
    """A channel activity's channelData: the team as Teams' TeamInfo names it (its id, and
    the Entra group id Graph reads the team by)."""
    return {"teamsChannelId": CHANNEL, "teamsTeamId": TEAM, "channel": {"id": CHANNEL},
            "team": {"id": TEAM, "aadGroupId": TEAM_GROUP}, "tenant": {"id": TENANT}}


def save_to_sift(service_url: str, root_id: str, message_id: str, html: str, *,
                 author: dict[str, Any], sender: dict[str, Any] | None = None,
                 command: str = "saveToSift") -> dict[str, Any]:
    """The "Save to Sift" message action on a channel message (composeExtension/fetchTask),
    with the messagePayload Teams sends for a reply in a thread."""
    payload = _base(service_url, channel_conversation(root_id), sender or user(),
                    f"f:{next_id()}")
    payload.update({"type": "invoke", "name": "composeExtension/fetchTask",
                    "channelData": {**channel_data(), "source": {"name": "message"}},
                    "value": {"commandId": command, "commandContext": "message",
                              "requestId": "7f7d22efe5414818becebcec649a7912",
                              "context": {"theme": "default"},
                              "messagePayload": {
        "linkToMessage": f"https://teams.microsoft.com/l/message/{CHANNEL}/{message_id}",
        "id": message_id, "replyToId": None if message_id == root_id else root_id,
        "createdDateTime": "2026-11-22T09:20:00.000Z", "lastModifiedDateTime": None,
        "deleted": False, "summary": None, "importance": "normal", "locale": "en-us",
        "body": {"contentType": "html", "content": html},
        "from": {"device": None, "conversation": None, "application": None,
                 "user": {"userIdentityType": "aadUser", "id": author["aadObjectId"],
                          "displayName": author["name"]}},
        "reactions": [], "mentions": [], "attachments": []}}})
    return payload


def channel_post_without_mention(service_url: str, text: str) -> dict[str, Any]:
    payload = channel_mention(service_url, text)
    payload["text"] = text
    payload["entities"] = [_client_info()]
    return payload


def group_conversation() -> dict[str, Any]:
    return {"isGroup": True, "conversationType": "groupChat", "tenantId": TENANT, "id": GROUP}


def group_message(service_url: str, text: str, *, mentioned: dict[str, Any] | None = None,
                  activity_id: str | None = None) -> dict[str, Any]:
    """A group-chat message: `mentioned` (an account, e.g. the bot) is @mentioned before it."""
    payload = _base(service_url, group_conversation(), user(), activity_id)
    entities = [_client_info()]
    if mentioned is not None:
        mention = f"<at>{mentioned['name']}</at>"
        text = f"{mention} {text}"
        entities.insert(0, {"type": "mention", "text": mention, "mentioned": mentioned})
    payload.update({"type": "message", "text": text, "textFormat": "plain",
                    "entities": entities})
    return payload


def bot() -> dict[str, Any]:
    return {"id": BOT_ID, "name": BOT_NAME}


def personal_conversation() -> dict[str, Any]:
    return {"conversationType": "personal", "tenantId": TENANT, "id": PERSONAL}


def personal_message(service_url: str, text: str, *, activity_id: str | None = None,
                     sender: dict[str, Any] | None = None,
                     attachments: list[dict[str, Any]] | None = None,
                     locale: str = "en-US") -> dict[str, Any]:
    """`locale`: the sender's Teams language, on the activity and its clientInfo entity."""
    payload = _base(service_url, personal_conversation(), sender or user(), activity_id)
    payload.update({"type": "message", "text": text, "textFormat": "plain", "locale": locale,
                    "entities": [{**_client_info(), "locale": locale}]})
    if attachments:
        payload["attachments"] = attachments
    return payload


def feedback_invoke(service_url: str, conversation: dict[str, Any], reply_to_id: str,
                    reaction: str, comment: str | None = None,
                    sender: dict[str, Any] | None = None) -> dict[str, Any]:
    """What Teams posts when someone submits its built-in feedback form."""
    payload = _base(service_url, conversation, sender or user(), f"f:{next_id()}")
    feedback = json.dumps({"feedbackText": comment}) if comment is not None else "{}"
    payload.update({"type": "invoke", "name": "message/submitAction", "replyToId": reply_to_id,
                    "value": {"actionName": "feedback",
                              "actionValue": {"reaction": reaction, "feedback": feedback}}})
    return payload


def reaction(service_url: str, conversation: dict[str, Any], reply_to_id: str, *,
             added: tuple[str, ...] = (), removed: tuple[str, ...] = (),
             sender: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = _base(service_url, conversation, sender or user(), f"f:{next_id()}")
    if conversation.get("conversationType") == "channel":
        payload["channelData"] = channel_data()
    payload.update({"type": "messageReaction", "replyToId": reply_to_id,
                    "legacy": {"replyToId": f"1:19uJ8TZA1cZcms7-{reply_to_id}"}})
    if added:
        payload["reactionsAdded"] = [{"type": t} for t in added]
    if removed:
        payload["reactionsRemoved"] = [{"type": t} for t in removed]
    return payload
