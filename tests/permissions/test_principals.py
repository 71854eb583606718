"""Platform principals (what connectors put in `access`) mapped onto Sift groups."""

from __future__ import annotations

from pathlib import Path

from bot.app import App
from bot.chat.access import Asker, Audience, Visibility
from bot.permissions.directory import GroupDirectory
from bot.permissions.resolver import GroupResolver
from bot.settings import GroupSettings, Settings
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from bot.teams.spec import PLATFORM as TEAMS_PLATFORM
from rag.types import TERMINAL

GROUPS = [GroupSettings(name="hr", emails=["hana@acme.example"],
                        principals=["confluence:group:hr", "confluence:space:HR"]),
          GroupSettings(name="staff", domains=["acme.example"],
                        principals=["notion:workspace"])]


def resolver() -> GroupResolver:
    return GroupResolver(GroupDirectory(GROUPS))


async def test_members_read_what_their_groups_map() -> None:
    hana = Asker(TERMINAL, "hana", email="hana@acme.example")
    groups = await resolver().groups_for(hana, Audience(Visibility.PRIVATE))
    assert groups == ("public", "hr", "staff", "confluence:group:hr", "confluence:space:HR",
                      "notion:workspace")


async def test_a_channel_audience_maps_too_and_outsiders_get_public_only() -> None:
    channel = await resolver().groups_for(Asker(SLACK_PLATFORM, "U1"),
                                          Audience(Visibility.CHANNEL, ("hr",)))
    assert channel == ("public", "hr", "confluence:group:hr", "confluence:space:HR")
    stranger = Asker(TERMINAL, "eve", email="eve@elsewhere.example")
    assert await resolver().groups_for(stranger, Audience(Visibility.PRIVATE)) == ("public",)


def test_mapped_principals_are_known_to_sync(tmp_path: Path) -> None:
    known = App(Settings(data_dir=tmp_path, groups=GROUPS)).sync_config.known_groups
    assert known is not None
    assert {"confluence:group:hr", "notion:workspace", "hr"} <= known
    assert "confluence:group:finance" not in known  # unmapped: nobody's group reads it


async def test_declared_entra_groups_read_what_sharepoint_grants_them() -> None:
    legal = GroupSettings(name="legal", entra_groups=["5F1B0C3A-AAAA"],
                          entra_members=["9A0C-77"])
    directory = GroupDirectory([legal])
    assert {"entra:group:5f1b0c3a-aaaa", "entra:user:9a0c-77"} <= directory.principals
    teams = Asker(TEAMS_PLATFORM, "9a0c-77")
    groups = await GroupResolver(directory).groups_for(teams, Audience(Visibility.PRIVATE))
    assert "entra:group:5f1b0c3a-aaaa" in groups and "entra:user:9a0c-77" in groups
    assert directory.with_principals(["other"]) == ("other",)


def test_declared_entra_groups_are_known_to_sync(tmp_path: Path) -> None:
    legal = GroupSettings(name="legal", entra_groups=["5F1B0C3A-AAAA"], entra_members=["9A0C-77"])
    known = App(Settings(data_dir=tmp_path, groups=[legal])).sync_config.known_groups
    assert known is not None  # else SharePoint files granted to them would be reported
    assert {"entra:group:5f1b0c3a-aaaa", "entra:user:9a0c-77"} <= known


async def test_platform_groups_read_what_their_connectors_grant() -> None:
    """`github_teams`, `jira_groups` and `servicenow_groups` are the principals the GitHub, Jira
    and ServiceNow connectors write, spelt as the platforms show them."""
    it = GroupSettings(name="it", emails=["ivo@acme.example"], github_teams=["Acme/Platform"],
                       jira_groups=["it-staff"], servicenow_groups=["Service Desk"])
    directory = GroupDirectory([it])
    assert directory.principals == {"github:team:acme/platform", "jira:group:it-staff",
                                    "servicenow:group:Service Desk"}
    ivo = Asker(TERMINAL, "ivo", email="ivo@acme.example")
    groups = await GroupResolver(directory).groups_for(ivo, Audience(Visibility.PRIVATE))
    assert groups == ("public", "it", "github:team:acme/platform", "jira:group:it-staff",
                      "servicenow:group:Service Desk")
    stranger = Asker(TERMINAL, "eve", email="eve@elsewhere.example")
    assert await GroupResolver(directory).groups_for(stranger, Audience(
        Visibility.PRIVATE)) == ("public",)
