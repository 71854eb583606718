"""The capture's small parts: which Slack payloads pick a reply, who may read a captured
answer, and the model's rewrite kept only when the thread supports it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bot.answers.documents import as_document, credit, draft_id
from bot.answers.writer import ModelWriter, supported
from bot.chat.capture import (
    DIRECT_KIND,
    PRIVATE_KIND,
    PUBLIC_KIND,
    Place,
    access_for,
)
from bot.slack.inbound import Me, parse_accept, parse_shortcut
from rag.ports import LLMRequest, LLMResponse, TextSink
from storage.answers import StoredDraft
from tests.fakes.slack_payloads import BOT_USER, USER, message_shortcut, reaction

ME = Me(BOT_USER, "BBOT")


@pytest.mark.parametrize(("name", "item_user", "user", "picked"), [
    ("white_check_mark", "U0DANA", USER, True),
    ("white_check_mark::skin-tone-2", "U0DANA", USER, True),
    ("+1", "U0DANA", USER, False),  # a 👍 on a person's reply is nothing to Sift
    ("white_check_mark", BOT_USER, USER, False),  # on Sift's answer: a vote, no thread read
    ("white_check_mark", "U0DANA", BOT_USER, False),  # Sift's own reaction
])
def test_which_reactions_pick_a_reply(name: str, item_user: str, user: str,
                                      picked: bool) -> None:
    payload = reaction(name, "1764700300.000200", user=user, event_id="Ev9",
                       item_user=item_user)
    found = parse_accept(payload, ME)
    assert (found is not None) is picked
    if found is not None:
        assert (found.key, found.user, found.message_ts) == ("Ev9", user, "1764700300.000200")


def test_the_save_shortcut_and_nothing_else() -> None:
    found = parse_shortcut(message_shortcut("1764700300.000200", thread_ts="1764700000.000100"))
    assert found is not None and (found.channel, found.message_ts) == \
        ("C111", "1764700300.000200")
    assert parse_shortcut(message_shortcut("1.2", callback_id="other")) is None
    assert parse_shortcut({**message_shortcut("1.2"), "type": "shortcut"}) is None
    assert parse_shortcut({**message_shortcut("1.2"), "channel": {}}) is None


@pytest.mark.parametrize(("platform", "place", "asker", "access"), [
    ("slack", Place("#it-help", PUBLIC_KIND), "U1", ("public",)),
    ("slack", Place("#vault", PRIVATE_KIND), "U1",
     ("slack:channel:G1", "sift:channel:slack:G1")),
    ("teams", Place("Finance", PRIVATE_KIND), "U1", ("sift:channel:teams:G1",)),
    ("slack", Place("a direct message", DIRECT_KIND), "U1", ("sift:user:slack:U1",)),
    ("slack", Place("a direct message", DIRECT_KIND), "", ()),  # nobody known: nobody
])
def test_who_may_read_a_captured_answer(platform: str, place: Place, asker: str,
                                        access: tuple[str, ...]) -> None:
    assert access_for(platform, "G1", place, asker) == access


def draft(**changes: object) -> StoredDraft:
    values: dict[str, object] = dict(
        captured_by="reaction", platform="slack", workspace="T1", channel="C1",
        channel_name="#it-help", channel_kind="public", thread="1.1", message_ref="1.2",
        asker="U1", author="U2", author_name="Dana",
        answered_at=datetime(2026, 12, 3, 9, 0, tzinfo=UTC), link="https://x.example/p1",
        question="How do I get a badge?", answer="Ask the desk.", reply="Ask the desk.",
        context="", access=("public",), id=7)
    values.update(changes)
    return StoredDraft(**values)  # type: ignore[arg-type]


def test_an_approved_answer_as_a_document() -> None:
    doc = as_document(draft())
    assert (doc.doc_id, doc.title, doc.url, doc.access) == \
        ("answer-7", "Answered by Dana in #it-help, 3 Dec 2026", "https://x.example/p1",
         ("public",))
    assert doc.body.startswith("# How do I get a badge?\n\nAsk the desk.")
    assert credit(draft(author_name="", channel_name="")) == \
        "Answered by U2 in a conversation, 3 Dec 2026"
    assert [draft_id(d) for d in ("answer-7", "answer-x", "doc-7")] == [7, None, None]


class ScriptedLLM:
    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(self.text, request.model)

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        raise AssertionError("drafts are not streamed")


THREAD = [("Ana", "is it the front desk?")]
REPLY = "Badges come from the facilities desk on floor 2; bring your staff card."


async def test_a_supported_rewrite_is_kept() -> None:
    llm = ScriptedLLM(json.dumps({"question": "Where do staff get a badge?",
                                  "answer": "Badges come from the facilities desk on floor 2. "
                                  "Bring your staff card."}))
    got = await ModelWriter(llm, "fast").write("Where do I get a badge?", THREAD, REPLY)
    assert got == ("Where do staff get a badge?",
                   "Badges come from the facilities desk on floor 2. Bring your staff card.")
    [request] = llm.requests
    assert request.json_schema is not None and REPLY in request.messages[0][1]


@pytest.mark.parametrize("text", [
    json.dumps({"question": "Where?", "answer": "Badges are mailed by the Madrid office "
                "within ten working days."}),  # says what the thread never said
    "not json at all",
    json.dumps({"question": "", "answer": REPLY}),
])
async def test_an_unsupported_or_broken_rewrite_keeps_the_reply(text: str) -> None:
    got = await ModelWriter(ScriptedLLM(text), "fast").write("Where do I get a badge?", THREAD,
                                                              REPLY)
    assert got == ("Where do I get a badge?", REPLY)


def test_support_is_per_sentence() -> None:
    source = "Run vault write database/rotate-root/staging then restart the api pods."
    assert supported("Run vault write database/rotate-root/staging. Restart the api pods.",
                     source)
    assert not supported("Run vault write. Then email the security team for approval.", source)
