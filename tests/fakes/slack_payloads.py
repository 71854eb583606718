"""Slack request payloads shaped like Slack's documented examples, and request signing."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

TEAM = "T111"
BOT_USER = "UBOT"
BOT_ID = "BBOT"
APP_ID = "A111"
USER = "U222"
CHANNEL = "C111"
DM = "D333"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # Slack's documentation example
BOT_TOKEN = "xoxb-111-222-fake"
APP_TOKEN = "xapp-1-A111-333-fake"

_event_ids = itertools.count(1)


def next_event_id() -> str:
    return f"Ev{next(_event_ids):08d}"


def envelope(event: dict[str, Any], event_id: str = "Ev1") -> dict[str, Any]:
    """The Events API outer envelope (docs.slack.dev/reference/objects/event-object)."""
    return {
        "token": "XXYYZZ", "team_id": TEAM, "api_app_id": APP_ID, "event": event,
        "type": "event_callback", "event_id": event_id, "event_time": int(time.time()),
        "authorizations": [{"enterprise_id": None, "team_id": TEAM, "user_id": BOT_USER,
                            "is_bot": True, "is_enterprise_install": False}],
        "is_ext_shared_channel": False, "event_context": f"4-{event_id}",
    }


def app_mention(text: str, *, ts: str = "1700000000.000100", thread_ts: str = "",
                user: str = USER, channel: str = CHANNEL,
                event_id: str = "Ev1", files: list[dict[str, Any]] | None = None
                ) -> dict[str, Any]:
    """`files`: file objects shared with the mention (FakeSlack.add_file)."""
    event: dict[str, Any] = {
        "type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel,
        "event_ts": ts, "client_msg_id": f"msg-{ts}", "team": TEAM,
        "blocks": [{"type": "rich_text", "block_id": "b1", "elements": [
            {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}]}]}
    if thread_ts:
        event["thread_ts"] = thread_ts
    if files:
        event.update(files=files, upload=False, display_as_bot=False)
    return envelope(event, event_id)


def message(text: str, *, ts: str = "1700000100.000300", thread_ts: str = "",
            user: str = USER, channel: str = CHANNEL, channel_type: str = "channel",
            event_id: str = "Ev1", files: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    """message.channels / message.im (docs.slack.dev/reference/events/message); with
    `files`, the file_share subtype that shares them."""
    event: dict[str, Any] = {"type": "message", "channel": channel,
                             "channel_type": channel_type, "user": user, "text": text,
                             "ts": ts, "event_ts": ts, "client_msg_id": f"msg-{ts}",
                             "team": TEAM}
    if files:
        event.update(subtype="file_share", files=files, upload=False, display_as_bot=False)
    if thread_ts:
        event["thread_ts"] = thread_ts
        event["parent_user_id"] = USER
    return envelope(event, event_id)


def direct_message(text: str, *, ts: str = "1700000200.000400", thread_ts: str = "",
                   event_id: str = "Ev1", files: list[dict[str, Any]] | None = None
                   ) -> dict[str, Any]:
    return message(text, ts=ts, thread_ts=thread_ts, channel=DM, channel_type="im",
                   event_id=event_id, files=files)


def reaction(name: str, item_ts: str, *, removed: bool = False, user: str = USER,
             channel: str = CHANNEL, event_id: str = "Ev1",
             item_user: str = BOT_USER) -> dict[str, Any]:
    """`item_user`: who wrote the message reacted to (Sift's answer, unless told)."""
    event = {"type": "reaction_removed" if removed else "reaction_added", "user": user,
             "reaction": name, "item_user": item_user,
             "item": {"type": "message", "channel": channel, "ts": item_ts},
             "event_ts": f"{int(time.time())}.000500"}
    return envelope(event, event_id)


def block_action(value: str, *, message_ts: str, thread_ts: str = "", channel: str = CHANNEL,
                 user: str = USER) -> dict[str, Any]:
    """A feedback_buttons click (block_actions), as sent to the Request URL."""
    container: dict[str, Any] = {"type": "message", "message_ts": message_ts,
                                 "channel_id": channel, "is_ephemeral": False}
    msg: dict[str, Any] = {"type": "message", "ts": message_ts, "user": BOT_USER,
                           "bot_id": BOT_ID, "text": "answer", "blocks": []}
    if thread_ts:
        container["thread_ts"] = msg["thread_ts"] = thread_ts
    return {
        "type": "block_actions", "token": "XXYYZZ", "api_app_id": APP_ID,
        "trigger_id": "1.2.3", "user": {"id": user, "username": "alice", "name": "alice",
                                         "team_id": TEAM},
        "team": {"id": TEAM, "domain": "acme"}, "container": container,
        "channel": {"id": channel, "name": "general"}, "message": msg,
        "response_url": f"https://hooks.slack.com/actions/{TEAM}/1/abc", "state": {"values": {}},
        "actions": [{"type": "feedback_buttons", "action_id": "answer_feedback",
                     "block_id": "sift_feedback", "value": value,
                     "text": {"type": "plain_text", "text": "👍"},
                     "action_ts": f"{int(time.time())}.123456"}],
    }


def sign(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None,
         retry_num: int | None = None) -> dict[str, str]:
    """The headers Slack sends: v0=HMAC-SHA256(secret, "v0:{ts}:{body}")."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}
    if retry_num:
        headers |= {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"}
    return headers


def event_request(payload: dict[str, Any]) -> tuple[str, str]:
    """(body, content type) of an Events API delivery."""
    return json.dumps(payload), "application/json"


def message_shortcut(message_ts: str, *, text: str = "", author: str = USER,
                     thread_ts: str = "", channel: str = CHANNEL, user: str = USER,
                     callback_id: str = "save_to_sift") -> dict[str, Any]:
    """A message shortcut's payload (type message_action), as Slack's shortcuts reference
    lists its fields."""
    msg: dict[str, Any] = {"type": "message", "user": author, "ts": message_ts, "text": text}
    if thread_ts:
        msg["thread_ts"] = thread_ts
    return {"type": "message_action", "token": "Nj2rfC2hU8mAfgaJLemZgO7H",
            "action_ts": f"{int(time.time())}.000800", "team": {"id": TEAM, "domain": "acme"},
            "user": {"id": user, "name": user.lower(), "team_id": TEAM},
            "channel": {"id": channel, "name": "it-help"}, "callback_id": callback_id,
            "trigger_id": f"13345224609.{next_event_id()}.fake", "message_ts": message_ts,
            "message": msg,
            "response_url": "https://hooks.slack.com/app-actions/T111/1/fake"}


def action_request(payload: dict[str, Any]) -> tuple[str, str]:
    """Interactivity arrives form-encoded: payload=<JSON>."""
    return urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"


def slash_command(text: str, *, channel: str = CHANNEL, user: str = USER,
                  trigger_id: str = "13345224609.738474920.8088930838d88f008e0") -> dict[str, str]:
    """A slash command invocation (form fields, as in Slack's "Implementing slash commands")."""
    return {
        "token": "gIkuvaNzQIHg97ATvDxqgjtO", "team_id": TEAM, "team_domain": "acme",
        "enterprise_id": "", "channel_id": channel, "channel_name": "help-it",
        "user_id": user, "user_name": "alice", "command": "/sift", "text": text,
        "api_app_id": APP_ID, "is_enterprise_install": "false",
        "response_url": f"https://hooks.slack.com/commands/{TEAM}/1234/abcd",
        "trigger_id": trigger_id,
    }


def button_action(action_id: str, value: str, *, message_ts: str, thread_ts: str = "",
                  channel: str = CHANNEL, user: str = USER,
                  ephemeral: bool = False) -> dict[str, Any]:
    """A click on a plain button (block_actions) in one of Sift's messages."""
    payload = block_action(value, message_ts=message_ts, thread_ts=thread_ts, channel=channel,
                           user=user)
    payload["container"]["is_ephemeral"] = ephemeral
    if ephemeral:  # ephemeral messages are not sent back with the action
        payload.pop("message")
    payload["actions"] = [{"type": "button", "action_id": action_id, "block_id": "sift_actions",
                           "value": value, "text": {"type": "plain_text", "text": "button"},
                           "action_ts": f"{int(time.time())}.123456"}]
    return payload


def app_home_opened(user: str = USER) -> dict[str, Any]:
    return envelope({"type": "app_home_opened", "user": user, "channel": DM, "tab": "home",
                     "event_ts": "1515449522000016"}, next_event_id())


def assistant_thread_started(thread_ts: str = "1729999327.187299",
                             user: str = USER) -> dict[str, Any]:
    return envelope({"type": "assistant_thread_started", "assistant_thread": {
        "user_id": user, "context": {"channel_id": CHANNEL, "team_id": TEAM,
                                     "enterprise_id": None},
        "channel_id": DM, "thread_ts": thread_ts}, "event_ts": "1715873754.429808"},
        next_event_id())


def command_request(fields: dict[str, str]) -> tuple[str, str]:
    """Slash commands arrive form-encoded, field by field."""
    return urlencode(fields), "application/x-www-form-urlencoded"
