"""Scenario help for questions in other languages: the test corpus marked as English."""

from __future__ import annotations

from dataclasses import replace

from bot.app import App
from tests.rag.corpus import CHUNKS

GERMAN = "Wie rotiere ich die Zugangsdaten der Staging-Datenbank?"
# The staging page, as the fake Claude's understanding finds it for the German question.
ENGLISH_PHRASE = "rotate staging database credentials"
GERMAN_ANSWER = "Folgen Sie dem dokumentierten Verfahren [1]."
RETRIEVAL_NOTE_DE = ("Hinweis: Die Wissensdatenbank ist auf Englisch geschrieben, und ich finde "
                     "am meisten, wenn Sie auf Englisch fragen.")


async def mark_english(app: App) -> None:
    """The corpus as sync stores it now: each chunk with its language (rag/language.py)."""
    index = app.index()
    await index.connect()
    try:
        chunks = [replace(c, language="en") for c in CHUNKS]
        await index.upsert(chunks, await app.embedder.embed_documents(
            [f"{c.title}\n{c.text}" for c in chunks]))
    finally:
        await index.close()


def grade_staging(question: str, document: str) -> tuple[float, str]:
    """The fake grader reads across languages, as Claude does."""
    if "rotate-root/staging" in document:
        return 0.95, "Gives the staging rotation steps."
    return 0.05, "Unrelated."
