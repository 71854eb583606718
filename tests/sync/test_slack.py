"""The Slack channels connector through the sync job, against the fake Slack Web API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rag.errors import SyncError
from sync.connectors.base import DocumentFailure, DocumentGone, SourceConfig, SourceDocument
from sync.connectors.slack import SlackConnector, SlackSettings
from sync.job import JobConfig, SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.slack_payloads import APP_ID, BOT_ID, BOT_TOKEN, BOT_USER
from tests.fakes.slack_server import Failure, FakeSlack
from tests.sync.conftest import HashEmbedder
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble

SOURCE = "chat"
HELP, SECRET, RANDOM, NOBOT, DMS = "C0HELP", "G0SECRET", "C0RANDOM", "C0NOBOT", "D0DIRECT"
ANA, BEN, CAL = "U0ANA", "U0BEN", "U0CAL"
VPN_Q = "1767000000.000100"  # a thread: question, answers, Sift's answer, noise
LONG = "1767000100.000200"  # a long message without replies
SHORT = "1767000200.000300"  # "thanks!": too short to stand alone
VAULT = "1767000300.000400"  # the private channel's thread
LONG_TEXT = ("To rotate the staging database password, run `dbctl rotate --env staging`, then "
             "paste the new secret into the deploy settings and restart the workers one at a "
             "time so that no request is dropped while they pick it up.")


def workspace(slack: FakeSlack) -> None:
    for user, name in ((ANA, "ana"), (BEN, "ben"), (CAL, "cal")):
        slack.add_user(user, f"{name}@acme.example", name)
    slack.add_channel(HELP, "it-help", members=[ANA, BEN])
    slack.add_channel(SECRET, "secret-ops", private=True, members=[ANA])
    slack.add_channel(RANDOM, "random", members=[ANA, BEN, CAL])
    slack.add_channel(NOBOT, "watercooler", member=False, members=[CAL])
    slack.add_message(HELP, ANA, "How do I get access to the *staging VPN*?\nThe old form "
                      "is gone.", VPN_Q)
    slack.add_message(HELP, BEN, f"<@{ANA}> use <https://vpn.example/form|the VPN form>, "
                      f"see also <#{RANDOM}>:\n```vpn-cli login --staging```", "1767000000.000500",
                      VPN_Q)
    slack.post(HELP, {"user": BOT_USER, "bot_id": BOT_ID, "app_id": APP_ID, "ts":
                      "1767000000.000600", "thread_ts": VPN_Q,
                      "text": "SIFT-OWN-ANSWER: the VPN form is linked in the handbook."})
    slack.post(HELP, {"user": CAL, "subtype": "channel_join", "ts": "1767000050.000100",
                      "text": f"<@{CAL}> has joined the channel"})
    slack.post(HELP, {"subtype": "bot_message", "bot_id": "B0OTHER", "ts": "1767000060.000100",
                      "username": "deploybot", "text": "Deploy 4711 finished on staging. " * 8})
    slack.add_message(HELP, CAL, LONG_TEXT, LONG)
    slack.add_message(HELP, BEN, "thanks!", SHORT)
    slack.add_message(SECRET, ANA, "The vault unseal code is SECRET-VAULT-42.", VAULT)
    slack.add_message(SECRET, ANA, "Keep it in the safe.", "1767000300.000900", VAULT)
    slack.add_message(RANDOM, CAL, "Lunch is at noon on Fridays, in the big room upstairs. "
                      * 5, "1767000400.000100")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    workspace(server)
    await server.start()
    yield server
    await server.stop()


def connector(slack: FakeSlack, token: str = BOT_TOKEN, **options: Any) -> SlackConnector:
    options.setdefault("channels", ["#it-help", SECRET])
    options.setdefault("lookback_days", 3650)  # the fixtures' threads are a year old
    return SlackConnector(SourceConfig(SOURCE, url=slack.api_url, token=token),
                          SlackSettings(**options))


def job(slack: FakeSlack, index: MemoryIndex, state: MemorySyncState, **options: Any
        ) -> SyncJob:
    config = JobConfig(known_groups=frozenset({"public"}), live_principals=("slack:channel:",),
                       checkpoint_overlap_s=0)
    return SyncJob(SOURCE, connector(slack, **options), index, HashEmbedder(), state, config)


async def read(slack: FakeSlack, **options: Any) -> list[Any]:
    return [d async for d in connector(slack, **options).documents(None)]


def by_id(items: list[Any]) -> dict[str, SourceDocument]:
    return {d.doc_id: d for d in items if isinstance(d, SourceDocument)}


async def test_a_thread_and_a_long_message_are_documents_and_noise_is_not(
        slack: FakeSlack) -> None:
    docs = by_id(await read(slack))
    assert set(docs) == {f"{HELP}:{VPN_Q}", f"{HELP}:{LONG}", f"{SECRET}:{VAULT}"}
    thread = docs[f"{HELP}:{VPN_Q}"]
    assert thread.title == "How do I get access to the staging VPN? (#it-help thread, 29 Dec 2025)"
    assert thread.url == f"https://acme.slack.com/archives/{HELP}/p1767000000000100"
    assert thread.authors == ("ana", "ben") and thread.channels == ("#it-help",)
    assert thread.access == ("public",) and thread.doc_type == "slack-thread"
    assert "@ana use [the VPN form](https://vpn.example/form), see also #random" in thread.body
    assert "```vpn-cli login --staging```" in thread.body
    assert "SIFT-OWN-ANSWER" not in thread.body  # Sift's own answer is never indexed
    assert thread.published_at is not None and thread.published_at.year == 2025
    assert thread.updated_at is not None and thread.updated_at.timestamp() == pytest.approx(
        1767000000.0005)
    alone = docs[f"{HELP}:{LONG}"]
    assert alone.doc_type == "slack-message" and alone.body.endswith(LONG_TEXT)
    assert alone.title.startswith("To rotate the staging database password") and len(
        alone.title) <= 121 + len(" (#it-help, 29 Dec 2025)")
    assert alone.title.endswith("… (#it-help, 29 Dec 2025)")


async def test_a_private_channel_is_readable_by_its_members_only(slack: FakeSlack) -> None:
    vault = by_id(await read(slack))[f"{SECRET}:{VAULT}"]
    assert vault.access == (f"slack:channel:{SECRET}",)
    assert "SECRET-VAULT-42" in vault.body and "Keep it in the safe." in vault.body


async def test_other_bots_only_when_listed(slack: FakeSlack) -> None:
    docs = by_id(await read(slack, bots=["B0OTHER"]))
    assert f"{HELP}:1767000060.000100" in docs
    assert not any("SIFT-OWN-ANSWER" in d.body for d in docs.values())
    slack.post(HELP, {"subtype": "bot_message", "bot_id": "B0ELSE", "app_id": APP_ID,
                      "ts": "1767000070.000100", "text": "SIFT-OWN-ANSWER again. " * 20})
    # Sift's app under another bot id (a reinstall) is still Sift: listing it changes nothing.
    docs = by_id(await read(slack, bots=["B0ELSE"]))
    assert f"{HELP}:1767000070.000100" not in docs


async def test_left_out_channels_mean_every_public_channel_sift_is_in(
        slack: FakeSlack) -> None:
    docs = by_id(await read(slack, channels=[]))
    assert {d.split(":")[0] for d in docs} == {HELP, RANDOM}  # not private, not without Sift


async def test_sync_indexes_then_follows_new_threads_and_replies(slack: FakeSlack) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    first = await job(slack, index, state).run(full=True)
    assert (first.counts.added, first.counts.failed, first.warnings) == (3, 0, ())
    again = await job(slack, index, state).run()
    assert again.counts.added == again.counts.updated == 0  # a second run writes nothing
    oldest = slack.calls_to("conversations.history")[-1].args["oldest"]
    assert float(oldest) < float(VPN_Q)  # old threads are looked at for new replies
    before = len(slack.calls_to("conversations.replies"))
    again = await job(slack, index, state).run()
    assert len(slack.calls_to("conversations.replies")) == before  # unchanged: not re-read
    slack.add_message(HELP, CAL, "The form moved to the IT portal last week.", "1999999999.1",
                      VPN_Q)
    slack.add_message(HELP, ANA, "Printers on floor 3 need the new driver; install it from "
                      "the software centre, then restart the print spooler service.",
                      "1999999999.2", "")
    slack.add_message(HELP, BEN, "I can confirm, it worked for me.", "1999999999.3",
                      "1999999999.2")
    changed = await job(slack, index, state).run()
    assert (changed.counts.added, changed.counts.updated) == (1, 1)
    text = " ".join(c.text for c, _ in index.chunks.values())
    assert "IT portal" in text and "new driver" in text and "SIFT-OWN-ANSWER" not in text
    slack.remove(HELP, LONG)  # deleted in Slack: the full pass prunes it
    pruned = await job(slack, index, state).run(full=True)
    assert pruned.counts.deleted == 1
    assert f"{HELP}:{LONG}" not in await index.list_documents(SOURCE)


async def test_a_sift_answer_in_a_thread_changes_nothing(slack: FakeSlack) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    await job(slack, index, state).run(full=True)
    slack.post(HELP, {"user": BOT_USER, "bot_id": BOT_ID, "ts": "1999999999.5",
                      "thread_ts": LONG, "text": "SIFT-OWN-ANSWER in a new thread."})
    later = await job(slack, index, state).run()
    assert later.counts.added == later.counts.updated == 0
    assert "SIFT-OWN-ANSWER" not in " ".join(c.text for c, _ in index.chunks.values())


async def test_a_channel_sift_cannot_read_is_named_and_the_rest_syncs(
        slack: FakeSlack) -> None:
    index = MemoryIndex()
    slack.add_channel(DMS, "", members=[ANA]).update(is_im=True, is_channel=False)
    summary = await job(slack, index, MemorySyncState(), channels=[
        "#it-help", NOBOT, "#no-such-room", DMS, "C0DELETED"]).run(full=True)
    assert summary.counts.added == 2
    assert summary.errors[0] == (
        f"Source 'chat' (Slack): channel {NOBOT} cannot be read: Sift is not a member of it: "
        "invite the bot there (/invite @Sift)")
    assert "#no-such-room cannot be read: Slack has no channel of that name" in (
        summary.errors[1])
    assert summary.errors[2] == (f"Source 'chat' (Slack): {DMS} is a direct message; those "
                                 "are never indexed")
    assert summary.errors[3].startswith("Source 'chat' (Slack): channel C0DELETED cannot be "
                                        "read: Slack has no such channel")
    assert not [c for c in slack.calls_to("conversations.history")
                if c.args["channel"] in (DMS, NOBOT)]  # never read, not even tried


async def test_a_revoked_token_is_one_sentence_and_writes_nothing(
        slack: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    with pytest.raises(SyncError) as caught:
        await job(slack, index, state, token="xoxb-revoked-123").run(full=True)
    assert caught.value.user_message == (
        "Source 'chat' (Slack): Slack refused the token (invalid_auth): check the source's "
        "`token`, or SIFT_SLACK_BOT_TOKEN, and the app's scopes (channels:history, "
        "groups:history, channels:read, groups:read, users:read)")
    assert await index.list_documents(SOURCE) == {} and state.docs == {}
    assert "xoxb-revoked-123" not in caplog.text


async def test_rate_limited_history_waits_for_retry_after(slack: FakeSlack) -> None:
    slack.fail("conversations.history", Failure("ratelimited", 429, {"Retry-After": "1"}))
    docs = by_id(await read(slack, channels=["#it-help"]))
    assert len(docs) == 2
    first, second = slack.calls_to("conversations.history")[:2]
    assert second.at - first.at >= 0.95  # Slack said one second


async def test_a_long_thread_is_read_page_by_page(slack: FakeSlack) -> None:
    for i in range(450):
        slack.add_message(RANDOM, BEN, f"reply number {i}", f"1767000400.{100 + i + 1:06d}",
                          "1767000400.000100")
    [doc] = by_id(await read(slack, channels=[RANDOM])).values()
    assert "reply number 0\n" in doc.body and doc.body.endswith("reply number 449")
    assert len(slack.calls_to("conversations.replies")) == 3  # 200 a page


async def test_a_thread_of_5000_replies_is_read_whole(slack: FakeSlack) -> None:
    for i in range(5000):
        slack.add_message(RANDOM, BEN, f"ticket {i}", f"1767000400.{100 + i + 1:06d}",
                          "1767000400.000100")
    [doc] = by_id(await read(slack, channels=[RANDOM])).values()
    assert "ticket 0\n" in doc.body and doc.body.endswith("ticket 4999")
    assert doc.body.count("**ben**") == 5000
    assert len(slack.calls_to("conversations.replies")) == 26  # 5,001 messages, 200 a page


async def test_a_message_of_blocks_and_attachments_without_text(slack: FakeSlack) -> None:
    slack.post(RANDOM, {"user": CAL, "ts": "1767000500.000100", "text": "",
                        "attachments": [{"fallback": "Incident 12 resolved", "title":
                                         "Incident 12 resolved", "text": "Root cause: the "
                                         "certificate of the internal proxy expired; renew "
                                         "it with certbot every sixty days from now on."}],
                        "files": [{"id": "F1", "name": "timeline.pdf", "title": "timeline"}]})
    docs = by_id(await read(slack, channels=[RANDOM], min_chars=50))
    doc = docs[f"{RANDOM}:1767000500.000100"]
    assert doc.title == "Incident 12 resolved (#random, 29 Dec 2025)"
    assert "certificate of the internal proxy" in doc.body
    assert "[file: timeline]" in doc.body


async def test_names_are_resolved_once_per_run(slack: FakeSlack,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    items = await read(slack, channels=["#it-help", "#secret-ops", "#random"])
    assert not [i for i in items if isinstance(i, DocumentFailure)]
    assert len(slack.calls_to("conversations.list")) == 1
    assert len(slack.calls_to("users.info")) == len({c.args["user"] for c in
                                                     slack.calls_to("users.info")})


async def test_fetch_reads_named_threads_and_says_which_are_gone(slack: FakeSlack) -> None:
    reply = next(m for m in slack.messages[HELP] if m["ts"] == "1767000000.000500")
    reply["text"] = "Use the IT portal now."
    reply["edited"] = {"user": BEN, "ts": "1767000900.000000"}
    slack.remove(HELP, LONG)
    ids = [f"{HELP}:{VPN_Q}", f"{HELP}:{LONG}", f"{HELP}:{SHORT}", f"{RANDOM}:1.2",
           f"{SECRET}:{VAULT}"]
    found = [d async for d in connector(slack).fetch(ids)]
    assert isinstance(found[0], SourceDocument) and "IT portal" in found[0].body
    assert found[0].updated_at is not None and found[0].updated_at.timestamp() == 1767000900
    assert found[1] == DocumentGone(f"{HELP}:{LONG}")  # deleted in Slack
    assert found[2] == DocumentGone(f"{HELP}:{SHORT}")  # too short to stand alone
    # #random is not this source's channel: passed over, not removed from another source
    assert isinstance(found[3], SourceDocument) and found[3].doc_id == f"{SECRET}:{VAULT}"
    assert len(found) == 4


class TestSlackContract(ConnectorContract):
    kind = "slack"

    @pytest.fixture
    def rig(self, slack: FakeSlack) -> Rig:
        def remove() -> str:
            slack.remove(HELP, LONG)
            return f"{HELP}:{LONG}"

        return Rig(
            SourceConfig(SOURCE, url=slack.api_url, token=BOT_TOKEN),
            {"channels": ["#it-help", SECRET], "lookback_days": 3650},
            frozenset({f"{HELP}:{VPN_Q}", f"{HELP}:{LONG}", f"{SECRET}:{VAULT}"}),
            {f"{HELP}:{VPN_Q}": Seen(
                "How do I get access to the staging VPN? (#it-help thread, 29 Dec 2025)",
                f"https://acme.slack.com/archives/{HELP}/p1767000000000100",
                "The old form is gone.")},
            public=f"{HELP}:{VPN_Q}", restricted=(f"{SECRET}:{VAULT}",
                                                  frozenset({f"slack:channel:{SECRET}"})),
            remove=remove,
            bad_credential=Trouble(("Source 'chat' (Slack)", "invalid_auth", "`token`"),
                                   source={"token": "xoxb-revoked-123"},
                                   secret="xoxb-revoked-123"),
            unreadable=Trouble((f"channel {NOBOT} cannot be read", "/invite @Sift"),
                               table={"channels": ["#it-help", SECRET, NOBOT]}),
            live_principals=("slack:channel:",))
