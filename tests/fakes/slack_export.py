"""Loads a Slack workspace export (users.json, channels.json, groups.json, <channel>/<day>.json)
into the fake Slack Web API, so that the sample conversations are served as Slack would."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.slack_server import FakeSlack

REPLY_FIELDS = {"reply_count", "reply_users_count", "reply_users", "latest_reply", "replies",
                "parent_user_id"}  # the fake derives them from the thread itself


def load_export(slack: FakeSlack, root: Path) -> None:
    for user in json.loads((root / "users.json").read_text(encoding="utf-8")):
        profile = user.get("profile") or {}
        slack.add_user(user["id"], profile.get("email", ""), user.get("name", ""))
    for listing, private in (("channels.json", False), ("groups.json", True)):
        path = root / listing
        if not path.is_file():
            continue
        for channel in json.loads(path.read_text(encoding="utf-8")):
            slack.add_channel(channel["id"], channel["name"], private=private,
                              members=list(channel.get("members") or []))
            for day in sorted((root / channel["name"]).glob("*.json")):
                for message in json.loads(day.read_text(encoding="utf-8")):
                    slack.post(channel["id"], {k: v for k, v in message.items()
                                               if k not in REPLY_FIELDS})
