"""Channel policy rows: the first of a message's channel, team and default, in one lookup."""

from __future__ import annotations

from storage.channel_policies import ChannelPolicyRepository
from storage.db import Database


def test_first_prefers_the_earliest_channel_that_has_a_policy(database: Database) -> None:
    rows = ChannelPolicyRepository(database)
    rows.put("teams", "*", "teams default", {"respond": "mention"})
    rows.put("teams", "19:team@thread.tacv2", "the team", {"private_answers": True})
    rows.put("slack", "C0HELP009", "#help on Slack", {})

    channel_first = rows.first("teams", ("19:chan@thread.tacv2", "19:team@thread.tacv2", "*"))
    assert channel_first is not None and channel_first.label == "the team"
    assert channel_first.settings == {"private_answers": True}
    default = rows.first("teams", ("19:other@thread.tacv2", "*"))
    assert default is not None and default.label == "teams default"


def test_first_is_none_when_no_channel_has_one(database: Database) -> None:
    rows = ChannelPolicyRepository(database)
    rows.put("slack", "C0HELP009", "#help", {})
    assert rows.first("teams", ("C0HELP009", "*")) is None  # another platform's row
    assert rows.first("slack", ("C0OTHER01", "*")) is None
    rows.put("slack", "C0OTHER01", "#other", {})
    found = rows.first("slack", ("C0OTHER01", "*"))
    assert found is not None and found.channel == "C0OTHER01"
