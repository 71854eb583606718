"""Loads the sample Teams tenant (examples/conversations/teams-export) into the fake Graph."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.fakes.entra_server import CLIENT_ID
from tests.fakes.teams_graph import FakeTeamsGraph, card


def load_export(graph: FakeTeamsGraph, folder: Path, sift_app_id: str = CLIENT_ID) -> None:
    tenant = json.loads((folder / "tenant.json").read_text(encoding="utf-8"))
    for user in tenant["users"]:
        graph.add_user(user["id"], user["name"], user["email"])
    for team in tenant["teams"]:
        graph.add_team(team["id"], team["name"], team["members"])
        for channel in team["channels"]:
            graph.add_channel(team["id"], channel["id"], channel["name"],
                              membership=channel.get("membership", "standard"),
                              members=channel.get("members"))
            for thread in channel["threads"]:
                _thread(graph, team["id"], channel["id"], thread, sift_app_id)


def _thread(graph: FakeTeamsGraph, team: str, channel: str, thread: dict[str, Any],
            sift_app_id: str) -> None:
    at = datetime.fromisoformat(thread["at"].replace("Z", "+00:00"))
    graph.clock = int(at.timestamp() * 1000) - 1000  # the root's id is its `at`
    root = None
    for m in thread["messages"]:
        app = m.get("app")
        if app == "sift":
            app = {"id": sift_app_id, "displayName": "Sift"}
        posted = graph.post(team, channel, m.get("from"), m["html"], reply_to=root, app=app,
                            mentions=m.get("mentions"),
                            attachments=[card(*m["card"])] if m.get("card") else None)
        root = root or posted
