"""The agent application's routes, in process, on the Agents SDK's own TestAdapter."""

from __future__ import annotations

from typing import Any

import pytest
from microsoft_agents.activity import (
    Activity,
    ChannelAccount,
    ConversationAccount,
    ConversationReference,
    InvokeResponse,
)
from microsoft_agents.authentication.msal import MsalConnectionManager
from microsoft_agents.hosting.core import AgentApplication, TurnState
from microsoft_agents.hosting.core.authorization import AgentAuthConfiguration
from microsoft_agents.testing import TestAdapter

from bot.chat.service import ChatLimits, ChatService
from bot.chat.tasks import Background
from bot.teams.app import build_agent
from bot.teams.handlers import TeamsHandlers
from bot.teams.surface import TeamsOptions
from rag import messages
from tests.fakes import teams_payloads as p
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import make_flow
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_llm, make_pipeline

SERVICE_URL = "https://smba.trafficmanager.net/amer/"  # never called: TestAdapter queues replies


class InProcess:
    def __init__(self, adapter: TestAdapter, agent: AgentApplication[TurnState],
                 tasks: Background, stores: MemoryChatStores) -> None:
        self.adapter, self.agent, self.tasks, self.stores = adapter, agent, tasks, stores

    async def send(self, payload: dict[str, Any]) -> list[Activity]:
        """One activity in; every reply once the answer (if any) has been sent."""
        await self.adapter.process_activity(self.adapter.claims_identity,
                                            Activity.model_validate(payload), self.agent.on_turn)
        await self.tasks.wait()
        replies = list(self.adapter.activity_queue)
        self.adapter.activity_queue.clear()
        return replies


@pytest.fixture
def teams(memory_index: MemoryIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> InProcess:
    user = p.user()
    adapter = TestAdapter(conversation=ConversationReference(
        channel_id="msteams", service_url=SERVICE_URL,
        conversation=ConversationAccount(id=p.PERSONAL, conversation_type="personal",
                                         tenant_id=p.TENANT),
        user=ChannelAccount(id=user["id"], name=user["name"],
                            aad_object_id=user["aadObjectId"]),
        agent=ChannelAccount(id=p.BOT_ID, name=p.BOT_NAME)))
    stores = MemoryChatStores()
    pipeline = make_pipeline(memory_index, embedder, make_llm(fake_anthropic.url),
                             recorder=stores.interactions)
    service = ChatService(pipeline, stores.chat_stores(), ChatLimits(max_message_chars=100))
    tasks = Background()
    handlers = TeamsHandlers(make_flow(service), adapter, TeamsOptions(typing_interval_s=60),
                             tasks)
    connections = MsalConnectionManager(connections_configurations={
        "SERVICE_CONNECTION": AgentAuthConfiguration(anonymous_allowed=True)})
    return InProcess(adapter, build_agent(connections, handlers), tasks, stores)


def personal(text: str) -> dict[str, Any]:
    return p.personal_message(SERVICE_URL, text)


async def test_question_is_streamed_then_answered(teams: InProcess) -> None:
    update, final = await teams.send(personal("how do I set up the VPN?"))
    assert (update.type, update.text) == ("typing", messages.TEAMS_WORKING)
    assert final.type == "message" and "[1]" in (final.text or "")
    assert final.channel_data == {"feedbackLoopEnabled": True}
    assert final.reply_to_id == update.reply_to_id  # both answer the person's message
    assert teams.stores.interactions.rows[1].message_ref == update.id


async def test_feedback_invoke_gets_an_empty_200(teams: InProcess) -> None:
    update, _ = await teams.send(personal("how do I set up the VPN?"))
    [response] = await teams.send(p.feedback_invoke(SERVICE_URL, p.personal_conversation(),
                                                    update.id or "", "like"))
    assert response.type == "invokeResponse"
    assert isinstance(response.value, InvokeResponse)
    assert (response.value.status, response.value.body) == (200, {})
    assert [v.vote for v in teams.stores.feedback.votes.values()] == [1]


async def test_other_submit_actions_are_acknowledged_and_ignored(teams: InProcess) -> None:
    payload = p.feedback_invoke(SERVICE_URL, p.personal_conversation(), "1", "like")
    payload["value"] = {"actionName": "something-else"}
    [response] = await teams.send(payload)
    assert response.type == "invokeResponse"
    assert teams.stores.feedback.votes == {}


async def test_refusals_are_sent_in_the_turn(teams: InProcess) -> None:
    [reply] = await teams.send(personal("x" * 101))
    assert reply.text == messages.TOO_LONG.format(length=101, limit=100)


@pytest.mark.parametrize("payload", [
    {"type": "conversationUpdate", "membersAdded": [{"id": p.BOT_ID}]},
    {"type": "installationUpdate", "action": "add"},
    {"type": "messageReaction", "reactionsAdded": [{"type": "like"}]},  # no replyToId
])
async def test_other_activities_get_no_reply(teams: InProcess, payload: dict[str, Any]) -> None:
    assert await teams.send(payload) == []
