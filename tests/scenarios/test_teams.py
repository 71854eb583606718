"""Teams end to end through `sift serve`: real Weaviate, SQLite, the real /api/messages route;
Teams' side is played by Activity JSON posts and a fake Bot Connector, Claude by a fake."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.app import App
from bot.server import serve
from bot.settings import ChannelSettings, RetrievalSettings, Settings, SourceSettings
from bot.teams.app import ROUTE
from bot.teams.spec import TeamsSettings
from rag import messages
from rag.embed import LocalEmbedder
from rag.errors import ConfigError, RetrievalError
from storage.models import ConversationTurn, Feedback, Interaction
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.teams_connector import FakeConnector
from tests.scenarios.stack import ServedSift, corpus, settings_for  # noqa: F401
from weaviate_server.process import ManagedWeaviate, free_port, free_ports

pytestmark = pytest.mark.weaviate


class TeamsSift:
    """A served Sift with Teams' side: Activity JSON in, the fake Bot Connector out."""

    def __init__(self, sift: ServedSift, connector: FakeConnector) -> None:
        self.sift = sift
        self.app = sift.app
        self.connector = connector

    async def post(self, payload: dict[str, Any], headers: dict[str, str] | None = None
                   ) -> int:
        status, _ = await self.sift.post(ROUTE, json=payload, headers=headers)
        return status

    def rows(self, model: Any) -> list[Any]:
        return self.sift.rows(model)

    async def linked(self, count: int, timeout_s: float = 20) -> list[Interaction]:
        """Answers are linked to their Teams message just after it is sent: wait for that."""
        deadline = time.monotonic() + timeout_s
        while True:
            rows = await asyncio.to_thread(self.sift.rows, Interaction)
            if len(rows) >= count and all(r.message_ref for r in rows):
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} linked answers, have {rows}")
            await asyncio.sleep(0.05)


Serve = Callable[..., Awaitable[TeamsSift]]


@pytest.fixture
async def fake_connector() -> AsyncIterator[FakeConnector]:
    server = FakeConnector()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def make_served(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,  # noqa: F811
                      embedder: LocalEmbedder, fake_anthropic: FakeAnthropic,
                      fake_connector: FakeConnector) -> AsyncIterator[Serve]:
    running: list[ServedSift] = []

    async def make(weaviate: ManagedWeaviate | None = None, **kw: Any) -> TeamsSift:
        app = App(settings_for(tmp_path, weaviate or weaviate_server, corpus, fake_anthropic,
                               **{"sources": [], "teams": TeamsSettings(enabled=True),
                                  **kw}))
        app.__dict__["embedder"] = embedder  # the session's model, instead of loading another
        sift = ServedSift(app)
        await sift.start()
        running.append(sift)
        return TeamsSift(sift, fake_connector)

    yield make
    for sift in running:
        await sift.stop()


async def test_channel_mention_answered_in_thread_and_feedback_stored(
        make_served: Serve) -> None:
    sift = await make_served()
    url = sift.connector.service_url
    assert await sift.post(p.channel_mention(url, "how do I set up the VPN?",
                                             activity_id="1700000000011",
                                             root_id="1700000000010")) == 202
    [reply] = await sift.connector.wait_for_messages(1)
    assert reply.conversation_id == f"{p.CHANNEL};messageid=1700000000010"
    assert reply.reply_to == "1700000000011"
    [ai] = reply.entities("https://schema.org/Message")
    names = [c["appearance"]["name"] for c in ai["citation"]]
    assert "Setting up the VPN" in names
    [row] = await sift.linked(1)
    assert (row.platform, row.message_channel, row.message_ref, row.thread) == (
        "teams", p.CHANNEL, reply.id, "1700000000010")

    user = p.user()["aadObjectId"]
    conversation = p.channel_conversation("1700000000010")
    assert await sift.post(p.feedback_invoke(url, conversation, reply.id, "dislike",
                                             "Which profile?")) == 200
    [vote] = sift.rows(Feedback)
    assert (vote.user_id, vote.vote, vote.channel, vote.comment) == (
        user, -1, "button", "Which profile?")

    channel = {"isGroup": True, "conversationType": "channel", "id": p.CHANNEL}
    await sift.post(p.reaction(url, channel, reply.id, added=("like",), sender=p.user(2)))
    assert sift.app.feedback.votes(row.id) == {user: -1, p.user(2)["aadObjectId"]: 1}
    await sift.post(p.reaction(url, channel, reply.id, removed=("like",), sender=p.user(2)))
    assert sift.app.feedback.votes(row.id) == {user: -1}


async def test_personal_follow_up_uses_stored_history_and_duplicates_are_dropped(
        make_served: Serve, fake_anthropic: FakeAnthropic) -> None:
    sift = await make_served()
    url = sift.connector.service_url
    first = p.personal_message(url, "how do I set up the VPN?", activity_id="1700000000021")
    assert await sift.post(first) == 202
    assert await sift.post(first) == 202  # Teams redelivers
    [answer] = await sift.connector.wait_for_messages(1)
    await sift.linked(1)
    # The exchange is remembered just after the answer is linked: a follow-up sent before
    # that would be asked on its own (a person is never that quick; this test is).
    await sift.sift.rows_when(ConversationTurn, 2)
    await sift.post(p.personal_message(url, "and on macOS?", activity_id="1700000000022"))
    await sift.connector.wait_for_messages(2)
    understand = fake_anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert "how do I set up the VPN?" in understand and answer.text in understand
    await sift.linked(2)
    assert len(sift.rows(Interaction)) == 2
    assert len(sift.connector.messages) == 2


async def test_personal_answer_streams_at_teams_pace(make_served: Serve,
                                                    fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.stream_delay_s = 0.3  # about three seconds of writing
    sift = await make_served()
    url = sift.connector.service_url
    await sift.post(p.personal_message(url, "how do I set up the VPN?"))
    [final] = await sift.connector.wait_for_messages(1)
    [row] = await sift.linked(1)
    [informative, *streaming] = [r for r in sift.connector.of_type("typing") if r.stream_info]
    assert streaming and [u.stream_info["streamSequence"] for u in streaming] == list(
        range(2, len(streaming) + 2))
    assert {u.stream_info["streamId"] for u in streaming} == {informative.id} == {
        final.stream_info["streamId"] if final.stream_info else None}
    sent = [informative, *streaming, final]
    assert all(b.at - a.at >= 0.9 for a, b in itertools.pairwise(sent))  # ~1 a second
    assert streaming[0].at < fake_anthropic.calls("answer")[-1].finished
    assert final.entities("https://schema.org/Message")[0]["citation"]
    assert row.message_ref == informative.id


async def test_credentials_configured_and_no_token_is_401(make_served: Serve) -> None:
    sift = await make_served(teams_app_id=p.BOT_APP_ID, teams_tenant_id=p.TENANT,
                             teams_app_password=SecretStr("not-a-real-secret"))
    payload = p.channel_mention(sift.connector.service_url, "how do I set up the VPN?")
    assert await sift.post(payload) == 401
    assert await sift.post(payload, {"Authorization": "Bearer abc.def.ghi"}) == 401
    await asyncio.sleep(0.5)
    assert sift.connector.received == [] and sift.rows(Interaction) == []


@pytest.mark.parametrize(("kw", "named"), [
    ({"host": "0.0.0.0", "teams": TeamsSettings(enabled=True)},
     "SIFT_TEAMS_APP_ID and SIFT_TEAMS_APP_PASSWORD are not set"),
    ({"host": "0.0.0.0", "teams_app_id": p.BOT_APP_ID}, "SIFT_TEAMS_TENANT_ID is not"),
])
async def test_unusable_teams_settings_refuse_to_start(tmp_path: Path, kw: dict[str, Any],
                                                       named: str) -> None:
    app = App(Settings(data_dir=tmp_path, port=free_port(), **kw))
    with pytest.raises(ConfigError, match=named):
        await serve(app, stop=asyncio.Event())
    assert not (tmp_path / "sift.db").exists()  # refused before starting anything


@pytest.mark.slow
async def test_weaviate_down_gives_a_clear_message(
        make_served: Serve, tmp_path_factory: pytest.TempPathFactory,
        weaviate_server: ManagedWeaviate) -> None:
    own = ManagedWeaviate(weaviate_server.binary, tmp_path_factory.mktemp("down"),
                          free_ports())
    own.start(timeout_s=120)
    try:
        # No waiting for it to come back (test_weaviate_restart.py holds that wait).
        sift = await make_served(weaviate=own, retrieval=RetrievalSettings(outage_wait_s=0))
    finally:
        own.stop()  # Weaviate goes away while Sift keeps serving
    await sift.post(p.channel_mention(sift.connector.service_url, "how do I set up the VPN?"))
    [reply] = await sift.connector.wait_for_messages(1)
    [row] = await sift.linked(1)
    assert reply.text == messages.with_reference(RetrievalError.user_message,
                                                 row.correlation_id)


async def test_a_team_policy_scopes_its_channels_and_a_thumbs_down_calls_for_help(
        make_served: Serve, tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "hr").mkdir()
    sift = await make_served(
        sources=[SourceSettings(name="kb", kind="folder", path=tmp_path / "kb"),
                 SourceSettings(name="hr", kind="folder", path=tmp_path / "hr")],
        channels=[ChannelSettings(platform="teams", channel=p.TEAM, sources=["hr"],
                                  escalate_to=["29:1helpdesk-agent"])])
    url = sift.connector.service_url
    await sift.post(p.channel_mention(url, "how do I set up the VPN?",
                                      activity_id="1700000000031", root_id="1700000000030"))
    [reply] = await sift.connector.wait_for_messages(1)
    [row] = await sift.linked(1)
    # the team's channels answer from `hr` only; the VPN article lives in `kb`
    assert row.status == "no_answer" and row.policy == f"teams:{p.TEAM}"
    assert "Setting up the VPN" not in reply.text
    conversation = p.channel_conversation("1700000000030")
    feedback = p.feedback_invoke(url, conversation, reply.id or "", "dislike")
    feedback["channelData"] = {"tenant": {"id": p.TENANT}, "channel": {"id": p.CHANNEL},
                               "team": {"id": p.TEAM}}  # as Teams sends it in channels
    await sift.post(feedback)
    [_, call] = await sift.connector.wait_for_messages(2)
    assert "<at>29:1helpdesk-agent</at>" in call.text
    [mention] = call.entities("mention")
    assert mention["mentioned"]["id"] == "29:1helpdesk-agent"
    assert call.conversation_id == f"{p.CHANNEL};messageid=1700000000030"  # the reply chain


async def test_streamed_answer_of_an_obedient_model_has_no_live_injected_link(
        make_served: Serve, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.stream_delay_s = 0.05
    fake_anthropic.answer_rule = lambda q, n: (
        "Install the [VPN profile](http://evil.example/p) from "
        "<a href=\"javascript:steal()\">the portal</a> [1]. ![x](http://evil.example/t.png)")
    sift = await make_served()
    await sift.post(p.personal_message(sift.connector.service_url, "how do I set up the VPN?"))
    [final] = await sift.connector.wait_for_messages(1)
    await sift.linked(1)
    sent = json.dumps([r.body for r in sift.connector.received])
    assert "VPN profile" in final.text
    assert "evil.example" not in sent and "javascript:" not in sent


def _unsigned_token(header: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    claims = {"aud": p.BOT_APP_ID, "iss": "https://api.botframework.com", "exp": 4102444800}
    return f"{part(header)}.{part(claims)}.c2lnbmF0dXJl"


@pytest.mark.parametrize("header", [{"alg": "RS256", "typ": "JWT"}, {"alg": "none"},
                                    {"alg": "RS256", "kid": 7}])
async def test_token_without_a_usable_key_id_is_401_not_500(make_served: Serve,
                                                            header: dict[str, Any]) -> None:
    sift = await make_served(teams_app_id=p.BOT_APP_ID, teams_tenant_id=p.TENANT,
                             teams_app_password=SecretStr("not-a-real-secret"))
    payload = p.channel_mention(sift.connector.service_url, "how do I set up the VPN?")
    token = _unsigned_token(header)
    assert await sift.post(payload, {"Authorization": f"Bearer {token}"}) == 401
    assert sift.connector.received == [] and sift.rows(Interaction) == []
