"""Any language: the question's language detected, the answer written in it, search phrases in
the documents' language, and a note when no model can add them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest

from rag.errors import RetrievalError
from rag.i18n import speaking
from rag.language import CorpusLanguage, detect, of_document
from rag.types import AnswerStatus, Mode, Question
from sync.chunk import ChunkingConfig
from sync.connectors.base import SourceDocument
from sync.prepare import to_chunks
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import CountingIndex, make_llm, make_pipeline
from tests.rag.corpus import CHUNKS

GERMAN = "Wie rotiere ich die Zugangsdaten der Staging-Datenbank?"
ENGLISH = "How do I rotate the staging database credentials?"


def by_title(question: str, document: str) -> tuple[float, str]:
    """The grader reads across languages, as Claude does: the staging page answers."""
    if "staging" in document and "vault write database/rotate-root/staging" in document:
        return 0.95, "Gives the staging rotation steps."
    return 0.05, "Unrelated."


@pytest.mark.parametrize(("text", "expected"), [
    ("Wie setze ich das VPN zurück?", "de"),
    ("Comment réinitialiser mon mot de passe ?", "fr"),
    ("¿Cómo restablezco mi contraseña del correo?", "es"),
    ("Como faço para redefinir minha senha do e-mail?", "pt"),
    ("パスワードをリセットするにはどうすればよいですか", "ja"),
    ("How do I rotate the staging database credentials?", "en"),
    ("Is AWS IoT Greengrass HIPAA compliant?", ""),  # names only: too unsure to tell
    ("VPN?", ""), ("hi", "")])
def test_detect(text: str, expected: str) -> None:
    assert detect(text) == expected


def test_a_document_keeps_its_declared_language_else_it_is_detected() -> None:
    assert of_document("en-us", "Bonjour tout le monde, voici la page.") == "en"
    assert of_document("", "Die Reisekostenrichtlinie gilt für alle Dienstreisen im Inland.") \
        == "de"


def test_sync_stores_each_documents_language_on_its_chunks() -> None:
    doc = SourceDocument(doc_id="urlaub", title="Urlaub", body=(
        "# Urlaub\n\nJede Mitarbeiterin und jeder Mitarbeiter hat 30 Tage bezahlten Urlaub im "
        "Jahr. Den Antrag stellen Sie im Personalportal."), url="https://wiki.example/urlaub")
    chunks = to_chunks("kb", doc, "h", ChunkingConfig())
    assert chunks and {c.language for c in chunks} == {"de"}


@pytest.fixture(params=["memory", "weaviate"])
def empty_index(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return MemoryIndex()
    return request.getfixturevalue("weaviate_index")


@pytest.fixture
async def english_index(empty_index: Any, embedder: Any) -> Any:
    index = empty_index
    chunks = [replace(c, language="en") for c in CHUNKS]
    chunks[-1] = replace(chunks[-1], language="de")  # a minority in another language
    vectors = await embedder.embed_documents([f"{c.title}\n{c.text}" for c in chunks])
    await index.upsert(chunks, vectors)
    return index


async def test_the_corpus_language_is_what_most_chunks_are_in(english_index: Any) -> None:
    counts = await english_index.count_by_language()
    assert counts == {"en": len(CHUNKS) - 1, "de": 1}
    assert await CorpusLanguage(english_index).language() == "en"
    assert await CorpusLanguage(MemoryIndex()).language() == ""  # nothing indexed: unknown


async def test_a_german_question_is_searched_in_english_and_answered_in_german(
        english_index: Any, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.phrases_in_corpus[GERMAN] = ["rotate staging database credentials"]
    fake_anthropic.grade_rule = by_title
    searched = CountingIndex(english_index)
    pipeline = make_pipeline(searched, embedder, make_llm(fake_anthropic.url),
                             corpus=CorpusLanguage(english_index))
    answer = await pipeline.answer(Question(GERMAN, mode=Mode.ACCURATE))
    understand = fake_anthropic.calls("understand")[-1].body["messages"][-1]["content"]
    assert "The knowledge base is written in English; this message is in German." in understand
    written = fake_anthropic.calls("answer")[-1].body["messages"][-1]["content"]
    assert "Write the answer in German, the language of the question" in written
    assert answer.status is AnswerStatus.ANSWERED
    assert answer.text.startswith("Folgen Sie dem dokumentierten Verfahren [1].")
    assert answer.citations[0].doc_id == "staging-creds"  # the English page, cited as it is
    assert "Hinweis" not in answer.text and "Note:" not in answer.text
    # The model's English phrase was searched, and the question as asked too.
    assert searched.searches == ["rotate staging database credentials", GERMAN]


async def test_an_english_question_asks_for_nothing_else(
        english_index: Any, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    pipeline = make_pipeline(english_index, embedder, make_llm(fake_anthropic.url),
                             corpus=CorpusLanguage(english_index))
    answer = await pipeline.answer(Question(ENGLISH, mode=Mode.ACCURATE))
    written = fake_anthropic.calls("answer")[-1].body["messages"][-1]["content"]
    assert "Write the answer in" not in written and "knowledge base is written" not in str(
        [c.body for c in fake_anthropic.calls("understand")])
    assert answer.text.startswith("Follow the documented procedure [1].")


async def test_without_a_model_the_answer_says_to_ask_in_the_documents_language(
        english_index: Any, embedder: Any) -> None:
    pipeline = make_pipeline(english_index, embedder, corpus=CorpusLanguage(english_index))
    with speaking("de-DE"):
        answer = await pipeline.answer(Question(GERMAN))
    assert answer.text.rstrip().endswith(
        "_Hinweis: Die Wissensdatenbank ist auf Englisch geschrieben, und ich finde am meisten, "
        "wenn Sie auf Englisch fragen._")
    same = await pipeline.answer(Question(ENGLISH))
    assert "Hinweis" not in same.text and "knowledge base is written" not in same.text


def test_the_embedders_say_whether_they_cross_languages() -> None:
    from rag.embed import LocalEmbedder, VoyageEmbedder

    assert LocalEmbedder.multilingual is False and VoyageEmbedder.multilingual is True


class SlowCounts:
    """An index whose count takes longer than a question may wait, or fails."""

    def __init__(self, delay_s: float, fail: bool = False) -> None:
        self.delay_s, self.fail, self.calls = delay_s, fail, 0

    async def count_by_language(self) -> dict[str, int]:
        self.calls += 1
        await asyncio.sleep(self.delay_s)
        if self.fail:
            raise RetrievalError("Weaviate is away")
        return {"en": 10, "": 3}


async def test_a_slow_or_failing_count_never_holds_a_question_up() -> None:
    slow = CorpusLanguage(SlowCounts(0.3), wait_s=0.05)
    started = time.monotonic()
    assert await slow.language() == ""  # not counted yet: searched as asked
    assert time.monotonic() - started < 0.25
    await asyncio.sleep(0.35)
    assert await slow.language() == "en"  # the count finished meanwhile, and is kept
    failing = SlowCounts(0.0, fail=True)
    away = CorpusLanguage(failing)
    assert await away.language() == "" and await away.language() == ""
    assert failing.calls == 2  # a failure is not kept: the next question counts again
