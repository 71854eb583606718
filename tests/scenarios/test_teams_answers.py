"""The answers loop through `sift serve` with Teams' side faked (Activity JSON in, the fake Bot
Connector out, a fake Graph holding the channel's thread): a question Sift cannot answer, an
expert's reply, the asker's 👍 on it, a pending draft, `sift answers approve`, and the same
question answered from the approved entry, cited to the thread."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.settings import SourceSettings
from bot.teams.app import ROUTE
from bot.teams.spec import TeamsSettings
from rag import messages
from rag.embed import LocalEmbedder
from storage.models import AnswerDraft, Interaction
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.teams_connector import FakeConnector
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph
from tests.scenarios.sift_cli import cli_settings, sift
from tests.scenarios.stack import ServedSift, corpus, settings_for  # noqa: F401
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate

ASKER, EXPERT, BYSTANDER = p.user(1), p.user(2), p.user(3)
QUESTION = "How can I get a parking badge for the Lisbon office?"
REPLY = ("Parking badges for the Lisbon office come from the facilities desk on floor 2: "
         "bring your staff card and the car's plate number.")


@dataclass
class Thread:
    root: str
    reply: str  # the expert's


class TeamsLoop:
    """A served Sift taking Teams activities, with the tenant's channel in a fake Graph."""

    def __init__(self, sift: ServedSift, connector: FakeConnector,
                 graph: FakeTeamsGraph) -> None:
        self.sift, self.connector, self.graph = sift, connector, graph

    async def post(self, payload: dict[str, Any]) -> tuple[int, str]:
        return await self.sift.post(ROUTE, json=payload)

    async def rows(self, model: Any, count: int, **where: Any) -> list[Any]:
        return await self.sift.matching(model, count, **where)

    def say(self, who: dict[str, Any] | None, html: str, reply_to: str | None = None) -> str:
        """A message in #it-help as Graph will list it; its id is what Teams sends too."""
        app = {"id": p.BOT_APP_ID, "displayName": p.BOT_NAME} if who is None else None
        return self.graph.post(p.TEAM_GROUP, p.CHANNEL, None if who is None else
                               who["aadObjectId"], html, reply_to=reply_to, app=app)

    async def ask(self, question: str, answers: int) -> str:
        """`@Sift question` as a new post; returns its id once Sift has replied."""
        root = self.say(ASKER, f"<p><at id=\"0\">Sift</at> {question}</p>")
        status, _ = await self.post(p.channel_mention(self.connector.service_url, question,
                                                      activity_id=root, root_id=root,
                                                      sender=ASKER))
        assert status == 202
        await self.connector.wait_for_messages(answers)
        return root

    async def unanswered_then_expert(self) -> Thread:
        root = await self.ask(QUESTION, 1)
        [asked] = await self.rows(Interaction, 1, status="no_answer")
        assert (asked.channel, asked.thread, asked.user_id) == \
            (p.CHANNEL, root, ASKER["aadObjectId"])
        self.say(None, "<p>I couldn't find this in the knowledge base.</p>", reply_to=root)
        return Thread(root, self.say(EXPERT, f"<p>{REPLY}</p>", reply_to=root))


Loop = Callable[..., Awaitable[TeamsLoop]]


@pytest.fixture
async def make_loop(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,  # noqa: F811
                    embedder: LocalEmbedder, fake_anthropic: FakeAnthropic
                    ) -> AsyncIterator[Loop]:
    graph, connector = FakeTeamsGraph(), FakeConnector()
    await graph.start()
    await connector.start()
    running: list[ServedSift] = []

    async def make() -> TeamsLoop:
        for who, email in ((ASKER, "jane@acme.example"), (EXPERT, "dana@acme.example"),
                           (BYSTANDER, "bo@acme.example")):
            graph.add_user(who["aadObjectId"], who["name"], email)
        graph.add_team(p.TEAM_GROUP, "IT", [u["aadObjectId"] for u in (ASKER, EXPERT)])
        graph.add_channel(p.TEAM_GROUP, p.CHANNEL, "it-help")
        # Another channel is synced: the Teams source lends its app to read #it-help's
        # threads (the bot here is anonymous, so it has no app of its own).
        graph.add_channel(p.TEAM_GROUP, "19:annc0000000000000000000000000000@thread.tacv2",
                          "announcements")
        source = SourceSettings.model_validate({
            "name": "teams", "kind": "teams", "url": graph.graph_url, "token": SECRET,
            "teams": {"teams": ["IT"], "channels": ["announcements"], "tenant_id": TENANT,
                      "client_id": CLIENT_ID, "authority": graph.login_url}})
        app = App(settings_for(tmp_path, weaviate_server, corpus, fake_anthropic,
                               sources=[source], teams=TeamsSettings(enabled=True)))
        app.__dict__["embedder"] = embedder
        served = ServedSift(app)
        await served.start()
        running.append(served)
        return TeamsLoop(served, connector, graph)

    yield make
    for served in running:
        await served.stop()
    await connector.stop()
    await graph.stop()


async def test_the_askers_like_captures_the_reply_and_approval_answers_the_question(
        make_loop: Loop, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await make_loop()
    thread = await s.unanswered_then_expert()
    status, _ = await s.post(p.reaction(s.connector.service_url,
                                        p.channel_conversation(thread.root), thread.reply,
                                        added=("like",), sender=ASKER))
    assert status in (200, 202)
    [draft] = await s.rows(AnswerDraft, 1)
    assert (draft.status, draft.captured_by, draft.platform, draft.channel, draft.thread) == \
        ("pending", "reaction", "teams", p.CHANNEL, thread.root)
    assert (draft.author, draft.author_name, draft.asker, draft.reply) == \
        (EXPERT["aadObjectId"], EXPERT["name"], ASKER["aadObjectId"], REPLY)
    # A standard channel's answer: read by the team's members, as the Teams source marks
    # its threads, and by everyone in this channel.
    assert (draft.channel_name, draft.channel_kind) == ("#it-help", "public")
    assert draft.access == [f"teams:team:{p.TEAM_GROUP}", f"sift:channel:teams:{p.CHANNEL}"]
    assert draft.link.startswith("https://teams.microsoft.com/l/message/") and \
        f"/{thread.reply}?" in draft.link
    sent = await s.connector.wait_for_messages(2)
    assert sent[-1].text == messages.ANSWER_CAPTURED
    assert sent[-1].conversation_id == f"{p.CHANNEL};messageid={thread.root}"
    with cli_settings(s.sift, monkeypatch):
        _, listed = await sift("answers", "list", "--json")
        assert [(d["id"], d["answer"], d["status"]) for d in listed] == \
            [(draft.id, REPLY, "pending")]
        _, approved = await sift("answers", "approve", str(draft.id), "--json")
    assert approved["status"] == "approved"
    assert approved["reasked"]["outcome"] == "answered"
    await s.ask(QUESTION, 3)
    [again] = await s.rows(Interaction, 1, status="answered")
    reply = (await s.connector.wait_for_messages(3))[-1]
    [entity] = reply.entities("https://schema.org/Message")
    cited = [(c["appearance"]["name"], c["appearance"].get("url")) for c in entity["citation"]]
    credit = f"Answered by {EXPERT['name']} in #it-help, {draft.answered_at:%-d %b %Y}"
    assert any(name.startswith(credit) and url == draft.link for name, url in cited), cited
    assert again.thread != thread.root


async def test_a_like_from_someone_else_or_on_the_question_captures_nothing(
        make_loop: Loop) -> None:
    s = await make_loop()
    thread = await s.unanswered_then_expert()
    url, conversation = s.connector.service_url, p.channel_conversation(thread.root)
    for target, who in ((thread.reply, BYSTANDER), (thread.reply, EXPERT),
                        (thread.root, ASKER)):
        status, _ = await s.post(p.reaction(url, conversation, target, added=("like",),
                                            sender=who))
        assert status in (200, 202)
    # A heart from the asker is a reaction, not "this solved it".
    await s.post(p.reaction(url, conversation, thread.reply, added=("heart",), sender=ASKER))
    await asyncio.sleep(1.5)
    assert await asyncio.to_thread(s.sift.rows, AnswerDraft) == []
    # The bystander's and expert's likes were read against the thread: Graph was asked.
    assert s.graph.paths(f"/messages/{thread.root}/replies")


async def test_save_to_sift_captures_any_reply_and_says_so_in_its_dialog(
        make_loop: Loop) -> None:
    s = await make_loop()
    thread = await s.unanswered_then_expert()
    url = s.connector.service_url
    for _ in range(2):  # saving the same reply again finds the same draft
        status, body = await s.post(p.save_to_sift(url, thread.root, thread.reply,
                                                   f"<p>{REPLY}</p>", author=EXPERT,
                                                   sender=BYSTANDER))
        assert status == 200
        assert json.loads(body) == {"task": {"type": "message",
                                             "value": messages.ANSWER_CAPTURED}}
    [draft] = await asyncio.to_thread(s.sift.rows, AnswerDraft)
    assert (draft.captured_by, draft.answer, draft.asker, draft.author) == \
        ("shortcut", REPLY, ASKER["aadObjectId"], EXPERT["aadObjectId"])
    # The question itself, and Sift's own reply, are refused in one sentence each.
    sift_reply = s.graph.teams[p.TEAM_GROUP].channels[p.CHANNEL].replies[thread.root][0]["id"]
    for target, author in ((thread.root, ASKER), (sift_reply, ASKER)):
        status, body = await s.post(p.save_to_sift(url, thread.root, target, "<p>…</p>",
                                                   author=author, sender=BYSTANDER))
        assert (status, json.loads(body)["task"]["value"]) == \
            (200, messages.ANSWER_NOT_CAPTURABLE)
    assert len(await asyncio.to_thread(s.sift.rows, AnswerDraft)) == 1


async def test_save_to_sift_where_graph_refuses_says_why_in_one_sentence(
        make_loop: Loop) -> None:
    s = await make_loop()
    thread = await s.unanswered_then_expert()
    s.graph.forbidden.add(p.TEAM_GROUP)
    status, body = await s.post(p.save_to_sift(s.connector.service_url, thread.root,
                                               thread.reply, f"<p>{REPLY}</p>",
                                               author=EXPERT, sender=ASKER))
    said = json.loads(body)["task"]["value"]
    assert status == 200 and said.startswith(messages.TEAMS_THREAD_UNREADABLE) and \
        "(reference: " in said
    assert await asyncio.to_thread(s.sift.rows, AnswerDraft) == []
