"""A Teams source's threads: a standard channel's for its team's members, a private channel's
for its own, matched by Entra object id or email, read from the fake Graph, cached, failing
closed; an answer in a Teams channel may use that channel's own threads and no other's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.chat.access import PUBLIC, Asker, Audience, Visibility
from bot.permissions.directory import GroupDirectory
from bot.permissions.resolver import GroupResolver
from bot.permissions.teams_channels import TeamsChannelMembers
from bot.teams.spec import PLATFORM as TEAMS
from bot.webchat.spec import PLATFORM as WEB
from tests.fakes.teams_graph import FakeTeamsGraph
from tests.permissions.test_resolver import Clock
from tests.sync.test_teams import ANA, BEN, CAL, EVE, GENERAL, HELP, IT, VAULT, connector, tenant

PRIVATE = Audience(Visibility.PRIVATE)
TEAM, SECRET = f"teams:team:{IT}", f"teams:channel:{VAULT}"


@pytest.fixture
async def graph() -> AsyncIterator[FakeTeamsGraph]:
    server = FakeTeamsGraph()
    await server.start()
    tenant(server)
    yield server
    await server.stop()


def resolver(graph: FakeTeamsGraph, clock: Clock | None = None) -> GroupResolver:
    clock = clock or Clock()
    members = TeamsChannelMembers([connector(graph, max_retries=0)], 60, clock)
    return GroupResolver(GroupDirectory([]), teams=members, ttl_s=60, clock=clock)


def teams_asker(user: str, email: str = "") -> Asker:
    return Asker(TEAMS, user, workspace="tenant-1", email=email)


async def test_members_read_their_team_and_their_private_channel(graph: FakeTeamsGraph
                                                                 ) -> None:
    r = resolver(graph)
    assert await r.groups_for(teams_asker(ANA), PRIVATE) == (PUBLIC, SECRET, TEAM)
    assert await r.groups_for(teams_asker(BEN), PRIVATE) == (PUBLIC, TEAM)
    assert await r.groups_for(teams_asker(EVE), PRIVATE) == (PUBLIC,)  # only in HR


async def test_an_asker_elsewhere_is_matched_by_email(graph: FakeTeamsGraph) -> None:
    r = resolver(graph)
    web = Asker(WEB, "session-1", email="Ana@Acme.example")
    assert await r.groups_for(web, PRIVATE) == (PUBLIC, SECRET, TEAM)
    assert await r.groups_for(Asker(WEB, "session-2"), PRIVATE) == (PUBLIC,)  # the public
    stranger = Asker(WEB, "session-3", email="mallory@elsewhere.example")
    assert await r.groups_for(stranger, PRIVATE) == (PUBLIC,)


async def test_an_answer_in_a_channel_reads_that_channels_threads_only(
        graph: FakeTeamsGraph) -> None:
    r = resolver(graph)

    def where(channel: str) -> Audience:
        return Audience(Visibility.CHANNEL, channel=channel)

    assert await r.groups_for(teams_asker(ANA), where(VAULT)) == (PUBLIC, SECRET)
    # A standard channel's readers are the team: its threads, never the private channel's.
    assert await r.groups_for(teams_asker(ANA), where(HELP)) == (PUBLIC, TEAM)
    assert await r.groups_for(teams_asker(ANA), where(GENERAL)) == (PUBLIC, TEAM)
    assert await r.groups_for(teams_asker(ANA), where("19:other@thread.tacv2")) == (PUBLIC,)
    # The same channel id from another platform is not that channel.
    assert await r.groups_for(Asker(WEB, "s", email="ana@acme.example"), where(VAULT)) == (
        PUBLIC,)


async def test_membership_is_cached_and_read_again_after_the_ttl(graph: FakeTeamsGraph
                                                                 ) -> None:
    clock = Clock()
    r = resolver(graph, clock)
    assert SECRET not in await r.groups_for(teams_asker(CAL), PRIVATE)
    graph.teams[IT].channels[VAULT].members.append(CAL)  # added to the private channel
    calls = len(graph.paths("/members"))
    assert SECRET not in await r.groups_for(teams_asker(CAL), PRIVATE)
    assert len(graph.paths("/members")) == calls  # cached
    clock.now += 61
    assert SECRET in await r.groups_for(teams_asker(CAL), PRIVATE)


@pytest.mark.parametrize(("forbid", "in_vault"), [
    (IT, (PUBLIC,)),  # the team's channels cannot be listed: no channel is known
    (f"{IT}/{VAULT}", (PUBLIC, SECRET)),  # its members cannot be read; its own answer can
])
async def test_a_failing_lookup_fails_closed_and_is_not_cached(
        graph: FakeTeamsGraph, forbid: str, in_vault: tuple[str, ...]) -> None:
    r = resolver(graph)
    graph.forbidden.add(forbid)
    assert await r.groups_for(teams_asker(ANA), PRIVATE) == (PUBLIC,)
    vault = Audience(Visibility.CHANNEL, channel=VAULT)
    assert await r.groups_for(teams_asker(ANA), vault) == in_vault
    graph.forbidden.clear()
    assert await r.groups_for(teams_asker(ANA), PRIVATE) == (PUBLIC, SECRET, TEAM)
    assert await r.groups_for(teams_asker(ANA), vault) == (PUBLIC, SECRET)


async def test_a_revoked_secret_gives_nothing_but_public(graph: FakeTeamsGraph) -> None:
    graph.entra.secret = "rotated"
    r = resolver(graph)
    assert await r.groups_for(teams_asker(ANA), PRIVATE) == (PUBLIC,)
    assert await r.groups_for(teams_asker(ANA), Audience(Visibility.CHANNEL,
                                                         channel=VAULT)) == (PUBLIC,)
