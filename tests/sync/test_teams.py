"""The Teams channels connector through the sync job, against the fake Microsoft Graph."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rag.errors import SyncError
from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.teams import TeamsConnector, TeamsSettings
from sync.job import JobConfig, SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph, card, file
from tests.sync.conftest import HashEmbedder
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble

SOURCE = "chat"
IT, HR = "0f4e2a7c-1b1d-4b7e-9a52-3e1c8d6b2f10", "7a9d0c3e-55e1-4f0a-8c0b-9b2d4e6f8a21"
HELP, GENERAL = "19:5c1e0a3f9d2b4c7e8a6f1b3d5e7c9a0b@thread.tacv2", \
    "19:general0a1b2c3d4e5f6a7b8c9d0e1f2a@thread.tacv2"
VAULT = "19:vault9f8e7d6c5b4a39281706f5e4d3c2b1a@thread.tacv2"
ANA, BEN, CAL, EVE = ("11111111-aaaa-4aaa-8aaa-000000000001", "22222222-bbbb-4bbb-8bbb-"
                      "000000000002", "33333333-cccc-4ccc-8ccc-000000000003",
                      "44444444-dddd-4ddd-8ddd-000000000004")
SIFT_APP = {"id": CLIENT_ID, "displayName": "Sift"}
OTHER_APP = {"id": "5e6f7a8b-0000-4000-8000-0000000000aa", "displayName": "Deploy bot"}
LONG_TEXT = ("To rotate the staging database password, run dbctl rotate --env staging, then "
             "paste the new secret into the deploy settings and restart the workers one at a "
             "time so that no request is dropped while they pick it up.")


class Tenant:
    """The fixture tenant's message ids, filled as the fake posts them."""

    vpn = long = short = vault = event = own = ""


def tenant(graph: FakeTeamsGraph) -> Tenant:
    ids = Tenant()
    for user, name in ((ANA, "Ana Lopez"), (BEN, "Ben Okafor"), (CAL, "Cal Reyes"),
                       (EVE, "Eve Stone")):
        graph.add_user(user, name, f"{name.split()[0].lower()}@acme.example")
    graph.add_team(IT, "IT", [ANA, BEN, CAL])
    graph.add_channel(IT, GENERAL, "General")
    graph.add_channel(IT, HELP, "it-help")
    graph.add_channel(IT, VAULT, "secret-ops", membership="private", members=[ANA])
    graph.add_team(HR, "HR", [EVE])
    graph.add_channel(HR, "19:hrgeneral@thread.tacv2", "General")
    ids.vpn = graph.post(IT, HELP, ANA, "<p>How do I get access to the <b>staging VPN</b>?"
                         "</p><p>The old form is gone.</p>")
    graph.post(IT, HELP, BEN, '<p><at id="0">Ana Lopez</at> use <a href="https://vpn.example'
               '/form">the VPN form</a>:</p><pre><code>vpn-cli login --staging</code></pre>',
               reply_to=ids.vpn, mentions=[ANA])
    ids.own = graph.post(IT, HELP, None, "SIFT-OWN-ANSWER: the VPN form is in the handbook.",
                         reply_to=ids.vpn, app=SIFT_APP, content_type="text")
    graph.post(IT, HELP, None, "Deploy 4711 finished on staging. " * 8, app=OTHER_APP,
               content_type="text")
    ids.event = graph.system_event(IT, HELP)
    ids.long = graph.post(IT, HELP, CAL, LONG_TEXT, content_type="text")
    ids.short = graph.post(IT, HELP, BEN, "<p>thanks!</p>")
    ids.vault = graph.post(IT, VAULT, ANA, "<p>The vault unseal code is SECRET-VAULT-42.</p>")
    graph.post(IT, VAULT, ANA, "<p>Keep it in the safe.</p>", reply_to=ids.vault)
    return ids


@pytest.fixture
async def graph() -> AsyncIterator[FakeTeamsGraph]:
    server = FakeTeamsGraph()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def ids(graph: FakeTeamsGraph) -> Tenant:
    return tenant(graph)


def connector(graph: FakeTeamsGraph, secret: str = SECRET, **options: Any) -> TeamsConnector:
    options.setdefault("teams", ["IT"])
    options.setdefault("channels", ["it-help", VAULT])
    return TeamsConnector(SourceConfig(SOURCE, url=graph.graph_url, token=secret),
                          TeamsSettings(tenant_id=TENANT, client_id=CLIENT_ID,
                                        app_id=CLIENT_ID, authority=graph.login_url,
                                        **options))


def job(graph: FakeTeamsGraph, index: MemoryIndex, state: MemorySyncState, **options: Any
        ) -> SyncJob:
    config = JobConfig(known_groups=frozenset({"public"}), live_principals=("teams:",),
                       checkpoint_overlap_s=0)
    return SyncJob(SOURCE, connector(graph, **options), index, HashEmbedder(), state, config)


async def read(graph: FakeTeamsGraph, **options: Any) -> list[Any]:
    return [d async for d in connector(graph, **options).documents(None)]


def by_id(items: list[Any]) -> dict[str, SourceDocument]:
    return {d.doc_id: d for d in items if isinstance(d, SourceDocument)}


def text_of(index: MemoryIndex) -> str:
    return " ".join(c.text for c, _ in index.chunks.values())


async def test_a_thread_and_a_long_message_are_documents_and_noise_is_not(
        graph: FakeTeamsGraph, ids: Tenant) -> None:
    docs = by_id(await read(graph))
    assert set(docs) == {f"{HELP}/{ids.vpn}", f"{HELP}/{ids.long}", f"{VAULT}/{ids.vault}"}
    thread = docs[f"{HELP}/{ids.vpn}"]
    assert thread.title == ("How do I get access to the staging VPN? (#it-help thread in IT, "
                            "29 Dec 2025)")
    assert thread.url.startswith("https://teams.microsoft.com/l/message/19%3A5c1e0a3f")
    assert thread.url.endswith(f"parentMessageId={ids.vpn}")
    assert thread.authors == ("Ana Lopez", "Ben Okafor") and thread.channels == ("#it-help",)
    assert thread.access == (f"teams:team:{IT}",) and thread.doc_type == "teams-thread"
    assert "@Ana Lopez use [the VPN form](https://vpn.example/form)" in thread.body
    assert "vpn-cli login --staging" in thread.body and "```" in thread.body
    assert "**staging VPN**" in thread.body  # HTML emphasis kept as Markdown
    assert "SIFT-OWN-ANSWER" not in thread.body  # Sift's own reply is never indexed
    alone = docs[f"{HELP}/{ids.long}"]
    assert alone.doc_type == "teams-message" and alone.body.endswith(LONG_TEXT)
    assert alone.title.endswith("… (#it-help in IT, 29 Dec 2025)")


async def test_a_private_channel_is_marked_for_its_members(graph: FakeTeamsGraph,
                                                             ids: Tenant) -> None:
    vault = by_id(await read(graph))[f"{VAULT}/{ids.vault}"]
    assert vault.access == (f"teams:channel:{VAULT}",)
    assert "SECRET-VAULT-42" in vault.body and "Keep it in the safe." in vault.body


async def test_other_apps_only_when_listed_and_sift_never(graph: FakeTeamsGraph,
                                                          ids: Tenant) -> None:
    docs = by_id(await read(graph, bots=[OTHER_APP["id"]]))
    assert any("Deploy 4711" in d.body for d in docs.values())
    # Listing Sift's own app changes nothing: its answers are never knowledge.
    docs = by_id(await read(graph, bots=[CLIENT_ID]))
    assert not any("SIFT-OWN-ANSWER" in d.body for d in docs.values())


async def test_left_out_channels_mean_every_standard_channel_of_the_teams(
        graph: FakeTeamsGraph, ids: Tenant) -> None:
    graph.post(IT, GENERAL, CAL, "<p>" + "Lunch is at noon on Fridays, upstairs. " * 6 + "</p>")
    docs = by_id(await read(graph, channels=[]))
    assert {d.split("/")[0] for d in docs} == {HELP, GENERAL}  # not the private channel


async def test_sync_follows_the_delta_then_a_full_pass_prunes(graph: FakeTeamsGraph,
                                                              ids: Tenant) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    first = await job(graph, index, state).run(full=True)
    assert (first.counts.added, first.counts.failed, first.warnings) == (3, 0, ())
    again = await job(graph, index, state).run()
    assert again.counts.added == again.counts.updated == 0  # a second run writes nothing
    assert graph.paths("/messages/delta?$deltatoken=")  # the stored deltaLink was followed
    replies_before = len(graph.paths("/replies"))
    await job(graph, index, state).run()
    assert len(graph.paths("/replies")) == replies_before  # nothing changed: none re-read
    graph.post(IT, HELP, CAL, "<p>The form moved to the IT portal last week.</p>",
               reply_to=ids.vpn)
    graph.post(IT, HELP, ANA, "<p>Printers on floor 3 need the new driver; install it from "
               "the software centre, then restart the print spooler service.</p>")
    graph.post(IT, HELP, None, "SIFT-OWN-ANSWER once more.", reply_to=ids.long, app=SIFT_APP,
               content_type="text")
    changed = await job(graph, index, state).run()
    assert (changed.counts.added, changed.counts.updated) == (0, 1)  # the printer note is short
    graph.edit(IT, VAULT, ids.vault, "<p>The vault unseal code changed; ask Ana.</p>")
    graph.delete(IT, HELP, ids.long)  # a deleted root: gone at once
    edited = await job(graph, index, state).run()
    assert (edited.counts.updated, edited.counts.deleted) == (1, 1)
    assert "IT portal" in text_of(index) and "SECRET-VAULT-42" not in text_of(index)
    assert "SIFT-OWN-ANSWER" not in text_of(index)
    graph.remove_channel(IT, VAULT)  # the channel was deleted
    pruned = await job(graph, index, state).run(full=True)
    assert pruned.counts.deleted == 1
    assert set(await index.list_documents(SOURCE)) == {f"{HELP}/{ids.vpn}"}
    assert pruned.errors == (f"Source 'chat' (Teams): no channel {VAULT} in the listed teams "
                             "(deleted, or misspelt?): check `teams.channels` and `teams.teams`",)


async def test_threads_older_than_the_deltas_eight_months_stay(graph: FakeTeamsGraph,
                                                                  ids: Tenant) -> None:
    graph.delta_since_ms = int(ids.long)  # the VPN thread is older than delta reaches
    index, state = MemoryIndex(), MemorySyncState()
    await job(graph, index, state).run(full=True)
    graph.post(IT, HELP, CAL, "<p>The form moved to the IT portal last week.</p>",
               reply_to=ids.vpn)  # a new reply: the delta lists its root again
    await job(graph, index, state).run()
    again = await job(graph, index, state).run(full=True)
    assert again.counts.deleted == 0
    assert f"{HELP}/{ids.vpn}" in await index.list_documents(SOURCE)
    assert "IT portal" in text_of(index)


async def test_an_expired_delta_token_lists_the_channel_again(graph: FakeTeamsGraph,
                                                                ids: Tenant) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    await job(graph, index, state).run(full=True)
    graph.post(IT, HELP, CAL, "<p>The form moved to the IT portal last week.</p>",
               reply_to=ids.vpn)
    graph.expired_below = graph.change + 1  # every stored token is too old now
    later = await job(graph, index, state).run()
    assert later.counts.updated == 1 and "IT portal" in text_of(index)
    assert later.warnings == tuple(
        f"#{name} in IT: Graph no longer honoured the stored delta token (HTTP 410); it was "
        "listed again from scratch" for name in ("it-help", "secret-ops"))
    graph.expired_below = 0
    quiet = await job(graph, index, state).run()  # the fresh link is kept
    assert (quiet.counts.updated, quiet.warnings) == (0, ())


async def test_a_throttled_delta_waits_for_retry_after(graph: FakeTeamsGraph,
                                                       ids: Tenant) -> None:
    graph.throttle = 1
    started = time.monotonic()
    docs = by_id(await read(graph, channels=["it-help"]))
    assert len(docs) == 2 and time.monotonic() - started >= 0.95  # Graph said one second


async def test_a_deleted_reply_leaves_its_thread(graph: FakeTeamsGraph, ids: Tenant) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    await job(graph, index, state, min_chars=10).run(full=True)
    [reply] = [r["id"] for r in graph.teams[IT].channels[VAULT].replies[ids.vault]]
    graph.delete(IT, VAULT, reply)
    later = await job(graph, index, state, min_chars=10).run()
    assert later.counts.updated == 1
    assert "Keep it in the safe" not in text_of(index) and "SECRET-VAULT-42" in text_of(index)


async def test_a_team_or_channel_the_app_cannot_read_is_named_and_the_rest_syncs(
        graph: FakeTeamsGraph, ids: Tenant) -> None:
    graph.forbidden |= {HR, f"{IT}/{VAULT}"}
    summary = await job(graph, MemoryIndex(), MemorySyncState(), teams=["IT", "HR", "Ops"],
                        channels=["it-help", VAULT, "General", "no-such-room"]).run(full=True)
    assert summary.counts.added == 2
    assert len([c for c in graph.calls if c.split("?")[0] == "/v1.0/teams"]) == 1  # once
    grant = ("grant the app ChannelMessage.Read.All (application, admin consent), or install "
             "Sift in that team so that its ChannelMessage.Read.Group consent applies")
    assert summary.errors == (
        "Source 'chat' (Teams): Graph lists no team named Ops: check `teams.teams`",
        f"Source 'chat' (Teams): Graph refused to read team HR (HTTP 403): {grant}",
        "Source 'chat' (Teams): no channel no-such-room in the listed teams (deleted, or "
        "misspelt?): check `teams.channels` and `teams.teams`",
        f"Source 'chat' (Teams): Graph refused to read #secret-ops (HTTP 403): {grant}")


async def test_a_revoked_secret_is_one_sentence_and_writes_nothing(
        graph: FakeTeamsGraph, ids: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    with pytest.raises(SyncError) as caught:
        await job(graph, index, state, secret="revoked-secret-9").run(full=True)
    assert caught.value.user_message.startswith(
        "Source 'chat' (Teams): Microsoft Entra refused the app's credentials")
    assert caught.value.user_message.endswith(
        "check the source's `token` (or SIFT_TEAMS_APP_PASSWORD: the client secret, expired "
        "or revoked?).")
    assert await index.list_documents(SOURCE) == {} and state.docs == {}
    assert "revoked-secret-9" not in caplog.text
    assert not graph.paths("/teams")  # nothing was asked of Graph without a token


async def test_cards_and_files_without_text(graph: FakeTeamsGraph, ids: Tenant) -> None:
    incident = graph.post(IT, HELP, None, '<attachment id="card-1"></attachment>',
                          app=OTHER_APP, attachments=[card(
                              "Incident 12 resolved", "Root cause: the certificate of the "
                              "internal proxy expired; renew it with certbot every sixty days.")])
    shared = graph.post(IT, HELP, CAL, '<attachment id="file-timeline.pdf"></attachment>',
                        attachments=[file("timeline.pdf")])
    graph.post(IT, HELP, BEN, "<p>Thanks, that timeline helps.</p>", reply_to=shared)
    docs = by_id(await read(graph, bots=[OTHER_APP["id"]], min_chars=50))
    doc = docs[f"{HELP}/{incident}"]
    assert doc.title == "Incident 12 resolved (#it-help in IT, 29 Dec 2025)"
    assert "certificate of the internal proxy" in doc.body
    assert "[file: timeline.pdf]" in docs[f"{HELP}/{shared}"].body


async def test_a_thread_of_5000_replies_is_read_page_by_page(graph: FakeTeamsGraph,
                                                              ids: Tenant) -> None:
    root = graph.post(IT, GENERAL, ANA, "<p>Post your VPN ticket numbers here</p>")
    for i in range(5000):
        graph.post(IT, GENERAL, BEN, f"ticket {i}", reply_to=root, content_type="text")
    [doc] = by_id(await read(graph, channels=["General"])).values()
    assert "ticket 0\n" in doc.body and doc.body.endswith("ticket 4999")
    assert doc.body.count("**Ben Okafor**") == 5000
    assert len(graph.paths(f"/messages/{root}/replies")) == 100  # 50 a page


async def test_a_next_link_to_another_host_is_not_followed_with_the_token(
        graph: FakeTeamsGraph, ids: Tenant) -> None:
    for n in range(60):  # more replies than one page: the listing needs its nextLink
        graph.post(IT, HELP, BEN, f"<p>reply {n}</p>", reply_to=ids.vpn)
    graph.next_base = "http://127.0.0.1:9"  # Graph handing back a link elsewhere
    index = MemoryIndex()
    with pytest.raises(SyncError) as caught:
        await job(graph, index, MemorySyncState()).run(full=True)
    assert caught.value.user_message.endswith(
        "Graph sent a link to another host (127.0.0.1); not followed.")
    assert "\n" not in caught.value.user_message and SECRET not in caught.value.user_message


class TestTeamsContract(ConnectorContract):
    kind = "teams"

    @pytest.fixture
    def rig(self, graph: FakeTeamsGraph, ids: Tenant) -> Rig:
        def remove() -> str:
            graph.delete(IT, HELP, ids.long)
            return f"{HELP}/{ids.long}"

        [root] = [m for m in graph.teams[IT].channels[HELP].roots if m["id"] == ids.vpn]
        return Rig(
            SourceConfig(SOURCE, url=graph.graph_url, token=SECRET),
            {"tenant_id": TENANT, "client_id": CLIENT_ID, "app_id": CLIENT_ID,
             "authority": graph.login_url, "teams": ["IT"], "channels": ["it-help", VAULT]},
            frozenset({f"{HELP}/{ids.vpn}", f"{HELP}/{ids.long}", f"{VAULT}/{ids.vault}"}),
            {f"{HELP}/{ids.vpn}": Seen(
                "How do I get access to the staging VPN? (#it-help thread in IT, 29 Dec 2025)",
                root["webUrl"], "The old form is gone.")},
            public=None,  # a standard channel is its team's, never everyone's
            restricted=(f"{VAULT}/{ids.vault}", frozenset({f"teams:channel:{VAULT}"})),
            remove=remove,
            bad_credential=Trouble(("Source 'chat' (Teams)", "`token`"),
                                   source={"token": "revoked-secret-9"},
                                   secret="revoked-secret-9"),
            unreadable=Trouble(("#secret-ops", "HTTP 403"),
                               apply=lambda: graph.forbidden.add(f"{IT}/{VAULT}")),
            live_principals=("teams:",))
