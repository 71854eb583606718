"""What /slack/events refuses before bolt sees it: headers bolt's verifier would crash on, and
signed bodies that are not the shape Slack sends (bolt and the listeners would raise: a 500)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier

# What Slack always sends with a slash command; without them it is not one of Slack's.
COMMAND_FIELDS = ("command", "user_id", "channel_id", "team_id")
MAX_STAMP_DIGITS = 12  # Unix seconds for the next 30,000 years


class Refused(Exception):
    """The request is not Slack's, or not a shape of Slack's: `status` and why (for the log)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def check_request(body: bytes, headers: Mapping[str, str], verifier: SignatureVerifier) -> None:
    """Raise Refused unless the request is signed by Slack and has a shape Slack sends."""
    stamp = headers.get("x-slack-request-timestamp", "")
    signature = headers.get("x-slack-signature", "")
    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= MAX_STAMP_DIGITS):
        raise Refused(401, "no X-Slack-Request-Timestamp of Unix seconds")
    if not signature.isascii() or not verifier.is_valid(body, stamp, signature):
        raise Refused(401, "an invalid signature (or a stale timestamp)")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(400, "the body is not UTF-8") from None
    if headers.get("content-type", "").startswith("application/json"):
        _check_envelope(_json(text, "the body"))
    else:
        _check_form(parse_qs(text, keep_blank_values=True))


def _json(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        raise Refused(400, f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise Refused(400, f"{what} is not a JSON object")
    return value


def _check_envelope(envelope: dict[str, Any]) -> None:
    kind = envelope.get("type")
    if not isinstance(kind, str):
        raise Refused(400, "the body has no type")
    if kind == "event_callback":
        event = envelope.get("event")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise Refused(400, "the event_callback has no event with a type")


def _check_form(form: dict[str, list[str]]) -> None:
    if "payload" in form:
        payload = _json(form["payload"][0], "the payload")
        if not isinstance(payload.get("type"), str):
            raise Refused(400, "the payload has no type")
        actions = payload.get("actions", [{}])
        if payload["type"] == "block_actions" and not (
                isinstance(actions, list) and actions
                and all(isinstance(a, dict) for a in actions)):
            raise Refused(400, "the block_actions payload has no actions")
    elif "command" in form:
        missing = [f for f in COMMAND_FIELDS if not form.get(f, [""])[0]]
        if missing:
            raise Refused(400, f"the slash command has no {', '.join(missing)}")
    elif "ssl_check" not in form:
        raise Refused(400, "the form is neither a payload, a command nor an ssl_check")
