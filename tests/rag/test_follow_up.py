"""Follow-ups without a model: what carries the conversation's subject and what stands alone."""

from __future__ import annotations

import pytest

from rag.follow_up import carry_subject
from rag.types import Question, Turn
from rag.understand import passthrough

FIRST = "What is the expense limit for client dinners?"
HISTORY = (Turn("user", FIRST), Turn("assistant", "Client entertainment: €80 / guest [1]"))


@pytest.mark.parametrize(("text", "standalone"), [
    ("and in Toronto?", "What is the expense limit for client dinners in Toronto?"),
    ("What about Lisbon?", "What is the expense limit for client dinners Lisbon?"),
    ("same for team celebrations", "What is the expense limit for client dinners team "
                                   "celebrations?"),
    ("who approves it?", "who approves it (expense limit client dinners)?"),
])
def test_a_follow_up_carries_the_earlier_question(text: str, standalone: str) -> None:
    carried = carry_subject(text, HISTORY)
    assert (carried.standalone, carried.subject) == (standalone, FIRST)


@pytest.mark.parametrize("text", [
    "And how do I request PTO?",  # opens like a follow-up, asks a question of its own
    "How do I set up the VPN?",
    "Andrew's laptop was stolen, what now?",  # "and" only as the start of a word
    "Does the VPN client log it when a laptop is lost?",  # "it", but says plenty else
])
def test_a_question_that_stands_alone_is_kept_as_asked(text: str) -> None:
    assert carry_subject(text, HISTORY).standalone == text
    assert carry_subject(text, HISTORY).subject == ""


def test_a_first_question_is_never_rewritten() -> None:
    assert carry_subject("and in Toronto?", ()).standalone == "and in Toronto?"


def test_a_follow_up_of_a_follow_up_keeps_the_conversation_s_subject() -> None:
    history = (*HISTORY, Turn("user", "and in Toronto?"), Turn("assistant", "CAD 120 [1]"))
    carried = carry_subject("who approves it?", history)
    assert carried.standalone == "who approves it (expense limit client dinners toronto)?"
    assert carried.subject == FIRST  # what decides the documents on topic, not "Toronto"


def test_without_a_model_understanding_searches_with_the_carried_question() -> None:
    understood = passthrough(Question("and in Toronto?", history=HISTORY))
    assert understood.standalone == understood.search_phrases[0]
    assert understood.search_phrases == (
        "What is the expense limit for client dinners in Toronto?",)
    assert understood.subject == FIRST
