"""The connector registry: every kind of source Sift reads, by its `kind` name."""

from __future__ import annotations

from sync.connectors import (
    confluence,
    folder,
    gdrive,
    github,
    http,
    jira,
    notion,
    servicenow,
    sharepoint,
    slack,
    teams,
    web,
    zendesk,
)
from sync.connectors.base import ConnectorSpec

# Adding a connector: its module declares SPEC beside its code, and it is listed here once.
SPECS: dict[str, ConnectorSpec] = {
    s.kind: s for s in (folder.SPEC, http.SPEC, confluence.SPEC, notion.SPEC, web.SPEC,
                       zendesk.SPEC, sharepoint.SPEC, gdrive.SPEC, jira.SPEC,
                       servicenow.SPEC, github.SPEC, slack.SPEC, teams.SPEC)}


def known_kinds() -> str:
    return ", ".join(sorted(SPECS))


def spec(kind: str) -> ConnectorSpec | None:
    return SPECS.get(kind)
