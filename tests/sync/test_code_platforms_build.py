"""Jira, GitHub and ServiceNow sources built from settings: what is missing or malformed is
one sentence naming the source and the setting."""

from __future__ import annotations

from typing import Any

import pytest

from rag.errors import ConfigError
from sync.connectors.base import SourceConfig
from sync.connectors.registry import spec


@pytest.mark.parametrize(("kind", "source", "table", "says"), [
    ("jira", {"url": "https://x.atlassian.net", "token": "t"}, {},
     "sets neither `jira.projects` nor `jira.jql`"),
    ("jira", {"token": "t"}, {"projects": ["IT"]}, "has no `url`"),
    ("jira", {"url": "https://x", "token": "t"}, {"jql": "project = IT ORDER BY created"},
     "may not end in ORDER BY"),
    ("jira", {"url": "https://x", "token": "t"}, {"projects": ["it ops"]},
     "`jira.projects` has it ops, not project keys"),
    ("github", {"token": "t"}, {}, "sets neither `github.repos` nor `github.org`"),
    ("github", {"token": "t"}, {"repos": ["handbook"]}, "`github.repos` has handbook"),
    ("github", {}, {"repos": ["acme/handbook"]}, "has no `token`"),
    ("github", {}, {"repos": ["acme/handbook"], "app_id": "1"},
     "not both `github.installation_id` and `github.private_key_file`"),
    ("servicenow", {"url": "https://x.service-now.com", "token": "p"}, {"username": "u"},
     "has no `servicenow.bases`"),
    ("servicenow", {"url": "https://x.service-now.com", "token": "p"}, {"bases": ["IT"]},
     "has no `servicenow.username`"),
    ("servicenow", {"url": "https://x.service-now.com", "token": "p"},
     {"bases": ["IT"], "auth": "oauth"}, "has no `servicenow.client_id`"),
])
def test_missing_settings_are_named(kind: str, source: dict[str, Any], table: dict[str, Any],
                                    says: str) -> None:
    found = spec(kind)
    assert found is not None
    with pytest.raises(ConfigError) as refused:
        found.build(SourceConfig("s", **source), found.settings(**table))
    assert says in refused.value.user_message and "'s'" in refused.value.user_message


@pytest.mark.parametrize("kind", ["jira", "github", "servicenow"])
def test_a_misspelt_key_is_refused(kind: str) -> None:
    found = spec(kind)
    assert found is not None
    with pytest.raises(ValueError, match=r"webhook_secrte|max_retrys"):
        found.settings(**{"webhook_secrte" if kind != "servicenow" else "max_retrys": "x"})
