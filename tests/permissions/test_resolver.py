"""The permission rule and identity lookups against fake Slack and Graph servers over HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import App
from bot.chat.access import PUBLIC, Asker, Audience, Visibility
from bot.permissions.build import build_resolver
from bot.permissions.directory import GroupDirectory, Identity
from bot.permissions.graph import NAMES, GraphMembership
from bot.permissions.resolver import GroupResolver
from bot.permissions.slack_identity import SlackDirectory
from bot.settings import GroupSettings, Settings
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from bot.teams.spec import PLATFORM as TEAMS_PLATFORM
from bot.teams.spec import TeamsSettings
from sync.connectors.common.entra import EntraApp, EntraToken
from tests.conftest import unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.graph_server import CLIENT_ID, SECRET, TENANT, FakeGraph
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import Failure, FakeSlack
from tests.fakes.tls import AppCertificate
from tests.scenarios.stack import ServedSift, settings_for
from weaviate_server.process import ManagedWeaviate

GROUPS = [
    GroupSettings(name="hr", emails=["Hana@Acme.example"], slack_usergroups=["@people-ops"]),
    GroupSettings(name="finance", domains=["finance.acme.example"]),
    GroupSettings(name="security", entra_groups=["g-sec"], entra_members=["oid-static"]),
]
CHANNEL = Audience(Visibility.CHANNEL, ("hr",))
PRIVATE = Audience(Visibility.PRIVATE)


def graph_token(graph: FakeGraph, secret: str) -> EntraToken:
    return EntraToken(EntraApp(TENANT, CLIENT_ID, SecretStr(secret), authority=graph.login_url),
                      NAMES)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    server.add_user("UHANA", "hana@acme.example")
    server.add_user("UOPS", "olu@acme.example")
    server.add_user("UFIN", "fin@finance.acme.example")
    server.add_user("UNOMAIL")
    server.add_usergroup("S1", "people-ops", ["UOPS"])
    server.add_usergroup("S2", "everyone", ["UHANA", "UOPS", "UFIN"])
    yield server
    await server.stop()


def resolver(slack: FakeSlack, clock: Clock | None = None,
             graph: GraphMembership | None = None) -> GroupResolver:
    directory = GroupDirectory(GROUPS)
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.api_url)
    clock = clock or Clock()
    return GroupResolver(directory, slack=SlackDirectory(client, directory.slack_handles, 60,
                                                          clock),
                         graph=graph, ttl_s=60, clock=clock)


def slack_user(user: str) -> Asker:
    return Asker(SLACK_PLATFORM, user, workspace="T111")


async def test_channel_answers_use_the_declared_audience_never_the_asker(
        slack: FakeSlack) -> None:
    r = resolver(slack)
    assert await r.groups_for(slack_user("UFIN"), CHANNEL) == (PUBLIC, "hr")
    assert await r.groups_for(slack_user("UHANA"), Audience(Visibility.CHANNEL)) == (PUBLIC,)
    assert slack.calls_to("users.info") == []  # a channel answer needs nobody's identity


async def test_private_answers_use_the_askers_own_groups(slack: FakeSlack) -> None:
    r = resolver(slack)
    assert await r.groups_for(slack_user("UHANA"), PRIVATE) == (PUBLIC, "hr")  # by email
    assert await r.groups_for(slack_user("UOPS"), PRIVATE) == (PUBLIC, "hr")  # by user group
    assert await r.groups_for(slack_user("UFIN"), PRIVATE) == (PUBLIC, "finance")  # by domain
    assert slack.calls_to("users.info")[0].args["user"] == "UHANA"


async def test_an_undeclared_audience_group_is_ignored_and_logged(
        slack: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    r = resolver(slack)
    with caplog.at_level(logging.WARNING):
        groups = await r.groups_for(slack_user("UHANA"),
                                    Audience(Visibility.CHANNEL, ("hr", "h-r")))
    assert groups == (PUBLIC, "hr")
    assert "'h-r'" in caplog.text


@pytest.mark.parametrize("break_it", ["no_email", "users_info_error", "usergroups_error",
                                      "unknown_user"])
async def test_any_lookup_failure_means_public_only_and_the_log_says_why(
        slack: FakeSlack, caplog: pytest.LogCaptureFixture, break_it: str) -> None:
    user = "UHANA"
    if break_it == "no_email":
        user = "UNOMAIL"
    elif break_it == "users_info_error":
        slack.fail("users.info", Failure("missing_scope"))
    elif break_it == "usergroups_error":
        slack.fail("usergroups.users.list", Failure("ratelimited", status=500), times=5)
    else:
        user = "UGHOST"
    with caplog.at_level(logging.WARNING):
        groups = await resolver(slack).groups_for(slack_user(user), PRIVATE)
    assert groups == (PUBLIC,)
    assert f"user {user} gets public answers only" in caplog.text
    expected = {"no_email": "users:read.email", "users_info_error": "missing_scope",
                "usergroups_error": "usergroups.users.list", "unknown_user": "user_not_found"}
    assert expected[break_it] in caplog.text


async def test_lookups_are_cached_for_the_ttl_and_failures_are_not(slack: FakeSlack) -> None:
    clock = Clock()
    r = resolver(slack, clock)
    await r.groups_for(slack_user("UHANA"), PRIVATE)
    await r.groups_for(slack_user("UHANA"), PRIVATE)
    assert len(slack.calls_to("users.info")) == 1
    slack.usergroups[0]["users"].append("UFIN")  # UFIN joins @people-ops
    assert await r.groups_for(slack_user("UFIN"), PRIVATE) == (PUBLIC, "finance")  # cached list
    clock.now += 61
    assert await r.groups_for(slack_user("UFIN"), PRIVATE) == (PUBLIC, "hr", "finance")
    slack.fail("users.info", Failure("ratelimited"))
    assert await r.groups_for(slack_user("UNOMAIL"), PRIVATE) == (PUBLIC,)
    slack.users["UNOMAIL"]["profile"]["email"] = "hana@acme.example"
    assert await r.groups_for(slack_user("UNOMAIL"), PRIVATE) == (PUBLIC, "hr")


async def test_a_missing_slack_usergroup_is_reported_by_name(slack: FakeSlack) -> None:
    slack.usergroups = [g for g in slack.usergroups if g["handle"] != "people-ops"]
    problems = await resolver(slack).startup_problems()
    assert len(problems) == 1
    assert "'hr'" in problems[0] and "'people-ops'" in problems[0]
    slack.add_usergroup("S9", "people-ops", [])
    assert await resolver(slack).startup_problems() == []


# A group reads what SharePoint grants its Entra groups and members.
SECURITY = (PUBLIC, "security", "entra:group:g-sec", "entra:user:oid-static")


async def test_teams_uses_upn_static_members_and_graph(slack: FakeSlack) -> None:
    r = resolver(slack)
    teams = Audience(Visibility.PRIVATE)
    assert await r.groups_for(Asker(TEAMS_PLATFORM, "oid-1", "tenant", "hana@acme.example"),
                              teams) == (PUBLIC, "hr")
    assert await r.groups_for(Asker(TEAMS_PLATFORM, "oid-static", "tenant"), teams) == \
        SECURITY  # no Graph credentials: the static member list
    async with FakeGraph() as graph:
        assert isinstance(graph, FakeGraph)
        graph.memberships["oid-2"] = {"g-sec", "g-other"}
        membership = GraphMembership(graph_token(graph, SECRET),
                                     GroupDirectory(GROUPS).entra_group_ids, graph.graph_url)
        r = resolver(slack, graph=membership)
        assert await r.groups_for(Asker(TEAMS_PLATFORM, "oid-2", "tenant"), teams) == \
            SECURITY
        assert graph.requests[-1] == {"oid": "oid-2", "groupIds": ["g-sec"]}
        graph.fail_status = 503
        assert await r.groups_for(Asker(TEAMS_PLATFORM, "oid-3", "tenant"), teams) == \
            (PUBLIC,)
        await membership.aclose()


async def test_a_wrong_graph_secret_means_public_only(slack: FakeSlack) -> None:
    async with FakeGraph() as graph:
        assert isinstance(graph, FakeGraph)
        graph.memberships["oid-2"] = {"g-sec"}
        membership = GraphMembership(graph_token(graph, "wrong"), frozenset({"g-sec"}),
                                     graph.graph_url)
        r = resolver(slack, graph=membership)
        assert await r.groups_for(Asker(TEAMS_PLATFORM, "oid-2", "t"), PRIVATE) == (PUBLIC,)
        assert graph.requests == []
        await membership.aclose()


def test_directory_matches_case_insensitively_and_only_declared_rules() -> None:
    d = GroupDirectory(GROUPS)
    assert d.groups_of(Identity(email="HANA@acme.EXAMPLE")) == ("hr",)
    assert d.groups_of(Identity(email="x@evil-finance.acme.example")) == ()
    assert d.groups_of(Identity(email="x@finance.acme.example.evil")) == ()
    assert d.groups_of(Identity(slack_usergroups=frozenset({"People-Ops"}))) == ("hr",)
    assert d.groups_of(Identity()) == ()


async def test_serve_names_a_missing_slack_usergroup_at_start_up(
        slack: FakeSlack, tmp_path: Path, weaviate_server: ManagedWeaviate,
        fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture) -> None:
    groups = [GroupSettings(name="hr", slack_usergroups=["people-ops"]),
              GroupSettings(name="legal", slack_usergroups=["legal-team"])]
    settings = settings_for(tmp_path, weaviate_server, unique_collection("Perm"),
                            fake_anthropic, groups=groups,
                            slack_bot_token=SecretStr(BOT_TOKEN), slack_api_url=slack.api_url,
                            slack_signing_secret=SecretStr("secret"),
                            teams=TeamsSettings(enabled=False))
    served = ServedSift(App(settings))
    with caplog.at_level(logging.WARNING):
        await served.start()
        await served.stop()
    problems = [r.getMessage() for r in caplog.records if "permissions:" in r.getMessage()]
    assert len(problems) == 1
    assert "'legal'" in problems[0] and "'legal-team'" in problems[0]


async def test_graph_reads_with_the_teams_certificate_when_there_is_no_password(
        tmp_path: Path) -> None:
    cert = AppCertificate.new("sift-bot")
    async with FakeGraph() as graph:
        assert isinstance(graph, FakeGraph)
        graph.entra.certificate, graph.entra.secret = cert.cert, None
        graph.memberships["oid-2"] = {"g-sec"}
        settings = Settings(
            groups=GROUPS, teams_app_id=CLIENT_ID, teams_tenant_id=TENANT,
            teams=TeamsSettings(certificate_pfx=cert.pfx_file(tmp_path)),
            permissions={"graph_url": graph.graph_url, "login_url": graph.login_url})
        r = build_resolver(settings)
        groups = await r.groups_for(Asker(TEAMS_PLATFORM, "oid-2", TENANT), PRIVATE)
        assert "security" in groups and "entra:group:g-sec" in groups  # Graph said so
        assert len(graph.entra.assertions) == 1 and graph.requests[-1]["oid"] == "oid-2"
