"""A private Slack channel's threads: readable by its current members only, matched by Slack
id or by email, looked up over HTTP against the fake Slack Web API, cached, failing closed."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.chat.access import PUBLIC, Asker, Audience, Visibility
from bot.permissions.directory import GroupDirectory
from bot.permissions.resolver import GroupResolver
from bot.permissions.slack_channels import SlackChannelMembers
from bot.permissions.slack_identity import SlackDirectory
from bot.settings import GroupSettings
from bot.slack.spec import PLATFORM as SLACK
from bot.teams.spec import PLATFORM as TEAMS
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import Failure, FakeSlack
from tests.permissions.test_resolver import Clock

VAULT, OPS, HELP = "G0VAULT", "G0OPS", "C0HELP"
ANA, BEN = "U0ANA", "U0BEN"
PRIVATE = Audience(Visibility.PRIVATE)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    server.add_user(ANA, "ana@acme.example")
    server.add_user(BEN, "ben@acme.example")
    server.add_channel(VAULT, "vault", private=True, members=[ANA])
    server.add_channel(OPS, "ops-private", private=True, members=[BEN])
    server.add_channel(HELP, "it-help", members=[ANA, BEN])
    yield server
    await server.stop()


def resolver(slack: FakeSlack, channels: tuple[str, ...] = (VAULT, "#ops-private", HELP),
             groups: list[GroupSettings] | None = None, clock: Clock | None = None
             ) -> GroupResolver:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.api_url)
    clock = clock or Clock()
    directory = GroupDirectory(groups or [])
    return GroupResolver(directory,
                         slack=SlackDirectory(client, directory.slack_handles, 60, clock),
                         channels=SlackChannelMembers(client, channels, 60, clock),
                         ttl_s=60, clock=clock)


def asker(user: str, platform: str = SLACK, email: str = "") -> Asker:
    return Asker(platform, user, workspace="T111", email=email)


async def test_a_member_reads_the_private_channels_they_are_in(slack: FakeSlack) -> None:
    r = resolver(slack)
    assert await r.groups_for(asker(ANA), PRIVATE) == (PUBLIC, f"slack:channel:{VAULT}")
    assert await r.groups_for(asker(BEN), PRIVATE) == (PUBLIC, f"slack:channel:{OPS}")
    assert await r.groups_for(asker("U0EVE"), PRIVATE) == (PUBLIC,)
    # The public channel needs no member list: its threads are public anyway.
    assert {c.args["channel"] for c in slack.calls_to("conversations.members")} == {OPS, VAULT}


async def test_a_channel_answer_carries_only_its_own_private_channel(
        slack: FakeSlack) -> None:
    r = resolver(slack)
    assert await r.groups_for(asker(ANA), Audience(Visibility.CHANNEL)) == (PUBLIC,)
    in_help = Audience(Visibility.CHANNEL, channel=HELP)
    assert await r.groups_for(asker(ANA), in_help) == (PUBLIC,)  # Ana's #vault stays out
    in_vault = Audience(Visibility.CHANNEL, channel=VAULT)
    assert await r.groups_for(asker(ANA), in_vault) == (PUBLIC, f"slack:channel:{VAULT}")
    unlisted = Audience(Visibility.CHANNEL, channel="G0UNLISTED")
    assert await r.groups_for(asker(ANA), unlisted) == (PUBLIC,)
    teams = asker("oid-ana", TEAMS, email="ana@acme.example")
    assert await r.groups_for(teams, in_vault) == (PUBLIC,)  # a Slack id only names Slack's
    assert slack.calls_to("conversations.members") == []  # a channel answer needs nobody's


async def test_an_asker_from_elsewhere_is_matched_by_email(slack: FakeSlack) -> None:
    r = resolver(slack)
    teams = asker("oid-ana", TEAMS, email="Ana@Acme.example")
    assert await r.groups_for(teams, PRIVATE) == (PUBLIC, f"slack:channel:{VAULT}")
    stranger = asker("oid-x", TEAMS, email="x@elsewhere.example")
    assert await r.groups_for(stranger, PRIVATE) == (PUBLIC,)
    assert await r.groups_for(asker("oid-y", TEAMS), PRIVATE) == (PUBLIC,)


async def test_membership_is_cached_for_the_ttl_and_leaving_takes_effect_after(
        slack: FakeSlack) -> None:
    clock = Clock()
    r = resolver(slack, clock=clock)
    assert f"slack:channel:{VAULT}" in await r.groups_for(asker(ANA), PRIVATE)
    assert f"slack:channel:{VAULT}" in await r.groups_for(asker(ANA), PRIVATE)
    assert len(slack.calls_to("conversations.members")) == 2  # once per private channel
    slack.members[VAULT].remove(ANA)  # Ana leaves #vault
    clock.now += 61
    assert await r.groups_for(asker(ANA), PRIVATE) == (PUBLIC,)


async def test_a_failed_member_lookup_fails_closed_and_is_not_cached(
        slack: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    r = resolver(slack, groups=[GroupSettings(name="staff", domains=["acme.example"])])
    slack.fail("conversations.members", Failure("fetch_members_failed"))
    with caplog.at_level(logging.WARNING):
        groups = await r.groups_for(asker(ANA), PRIVATE)
    assert groups == (PUBLIC, "staff")  # the group lookup stands on its own
    assert "gets no private Slack channel's threads" in caplog.text
    assert "fetch_members_failed" in caplog.text
    again = await r.groups_for(asker(ANA), PRIVATE)
    assert again == (PUBLIC, "staff", f"slack:channel:{VAULT}")  # not cached: tried again


async def test_without_listed_channels_no_lookups_happen(slack: FakeSlack) -> None:
    r = resolver(slack, channels=())
    assert await r.groups_for(asker(ANA), PRIVATE) == (PUBLIC,)
    assert slack.calls == []
