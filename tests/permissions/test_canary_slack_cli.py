"""The Slack source's canary through `sift sync` and `sift ask` on a real Weaviate: the
listed channels are indexed from the fake Slack Web API, and a private channel's marker
reaches `sift ask --as` its member's email only (users.lookupByEmail, conversations.members)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from rag.embed import LocalEmbedder
from tests.bot.test_cli_ask import sift_environment
from tests.conftest import unique_collection
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import FakeSlack
from tests.permissions.cli_canary import drop, seen_by, sift
from tests.permissions.test_canary_slack_channels import (
    EVE,
    HELP,
    MEMBER,
    PRIVATE_MARK,
    PUBLIC_MARK,
    QUESTION,
    VAULT,
    marks,
    thread,
)
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
MEMBER_EMAIL, EVE_EMAIL = "ana@acme.example", "eve@acme.example"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    server.add_user(MEMBER, MEMBER_EMAIL)
    server.add_user(EVE, EVE_EMAIL)
    server.add_channel(HELP, "it-help", members=[MEMBER, EVE])
    server.add_channel(VAULT, "vault", private=True, members=[MEMBER])
    server.add_channel("C0NOBOT", "watercooler", member=False)
    thread(server, HELP, "1767000000.000100", PUBLIC_MARK)
    thread(server, VAULT, "1767000100.000100", PRIVATE_MARK)
    yield server
    await server.stop()


@contextlib.contextmanager
def environment(mp: pytest.MonkeyPatch, server: ManagedWeaviate, collection: str,
                home: Path, slack: FakeSlack) -> Iterator[None]:
    (home / "sift.toml").write_text(
        '[[sources]]\nname = "chat"\nkind = "slack"\n[sources.slack]\n'
        f'channels = ["{HELP}", "#vault", "C0NOBOT"]\nmin_chars = 10\n', encoding="utf-8")
    with sift_environment(mp, server, collection, home):
        mp.setenv("SIFT_CONFIG", str(home / "sift.toml"))
        mp.setenv("SIFT_SLACK_BOT_TOKEN", BOT_TOKEN)
        mp.setenv("SIFT_SLACK_API_URL", slack.api_url)
        mp.setenv("SIFT_RETRIEVAL__DIVERSITY", "false")
        yield



async def test_sync_then_ask_shows_the_private_thread_to_its_member_only(
        weaviate_server: ManagedWeaviate, embedder: LocalEmbedder, slack: FakeSlack,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collection = unique_collection("CanarySlackCli")
    try:
        with environment(monkeypatch, weaviate_server, collection, tmp_path, slack):
            code, out, err = await sift("sync")
            printed = out + err
            # The channel without the bot is named; the rest is indexed, the status says so.
            assert code == 1, printed
            assert "C0NOBOT" in printed and "invite the bot" in printed
            assert "1 document could not be read" in printed
            assert marks(printed) == set()  # the report names channels, never their content
            seen = await seen_by((MEMBER_EMAIL, EVE_EMAIL, "nobody@elsewhere.example"),
                                 QUESTION, marks)
    finally:
        await drop(weaviate_server, embedder, collection)
    assert seen == {"public": {PUBLIC_MARK}, MEMBER_EMAIL: {PUBLIC_MARK, PRIVATE_MARK},
                    EVE_EMAIL: {PUBLIC_MARK}, "nobody@elsewhere.example": {PUBLIC_MARK}}
