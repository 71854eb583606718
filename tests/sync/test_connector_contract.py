"""Every kind in the connector registry runs the connector contract against its fake."""

from __future__ import annotations

from sync.connectors.registry import SPECS
from tests.sync import (  # each holds its kind's TestXContract
    test_confluence,
    test_folder,
    test_gdrive,
    test_github,
    test_http,
    test_jira,
    test_notion,
    test_servicenow,
    test_sharepoint,
    test_slack,
    test_teams,
    test_web,
    test_zendesk,
)
from tests.sync.connector_contract import ConnectorContract

MODULES = (test_confluence, test_folder, test_gdrive, test_github, test_http, test_jira,
           test_notion, test_servicenow, test_sharepoint, test_slack, test_teams, test_web,
           test_zendesk)


def test_every_registered_kind_runs_the_contract() -> None:
    runs = [c for c in ConnectorContract.__subclasses__() if c.__module__ in {
        m.__name__ for m in MODULES}]
    assert sorted(c.kind for c in runs) == sorted(SPECS)
    assert all(c.__name__.startswith("Test") for c in runs)  # else pytest would not run it
