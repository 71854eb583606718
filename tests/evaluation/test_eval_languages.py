"""`sift eval --languages`: the tiny dataset's questions in German, searched as asked and, with
the fake Claude, with its phrases in the documents' language; real Weaviate and embedder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli import main
from evaluation.dataset import load
from evaluation.languages import load_translations
from rag.errors import InputError
from tests.evaluation.test_eval_e2e import sift_env, sift_eval  # noqa: F401
from tests.evaluation.tiny import QUERIES, write_beir
from tests.fakes.anthropic_server import FakeAnthropic

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

GERMAN = {
    "q1": "Wie oft werden die Zephyrine-Signaturschlüssel rotiert?",
    "q2": "Wie kalibriere ich das Fluxkompensator-Array neu?",
    "q3": "Wie lange habe ich Zeit, eine Reisekostenabrechnung einzureichen?",
    "q4": "Was muss ich bei einem Vorfall der Schweregradstufe eins tun?",
    "q5": "Wie verbinde ich mich von zu Hause aus mit dem VPN?",
    "q6": "Wie viele Wochen Elternzeit bekommen frischgebackene Eltern?",
}
ENGLISH = {query_id: text for query_id, text, _, _, _ in QUERIES}


def write_german(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "de.jsonl").write_text("".join(
        json.dumps({"_id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in GERMAN.items()),
        encoding="utf-8")
    return root


def rows(data: dict[str, object]) -> dict[str, dict[str, object]]:
    return {r["search"]: r for r in data["languages"]}  # type: ignore[attr-defined,index]


def test_without_a_model_german_is_searched_as_asked(sift_env: Path) -> None:  # noqa: F811
    dataset = write_beir(sift_env / "tiny")
    data = sift_eval(dataset, sift_env / "out", "--modes", "hybrid",
                     "--languages", str(write_german(sift_env / "de")))
    found = rows(data)
    asked, translated = found["as asked"], found["phrases in the documents' language"]
    assert (asked["language"], asked["questions"], asked["corpus_language"]) == ("de", 6, "en")
    assert asked["detected"] == 6 and asked["recall"] is not None
    assert translated["recall"] is None  # the phrases need a model
    assert "## Other languages" in data["markdown"] and "needs a model" in data["markdown"]


async def test_with_the_fake_claude_the_english_phrases_find_the_pages(
        sift_env: Path, fake_anthropic: FakeAnthropic,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_ANTHROPIC_API_KEY", "sk-test-key")
    monkeypatch.setenv("SIFT_ANTHROPIC_BASE_URL", fake_anthropic.url)
    # The fake translates perfectly: each German question's phrase is the English original.
    fake_anthropic.phrases_in_corpus = {GERMAN[i]: [ENGLISH[i]] for i in GERMAN}
    dataset = write_beir(sift_env / "tiny")
    data = await asyncio.to_thread(sift_eval, dataset, sift_env / "out", "--modes", "hybrid",
                                   "--languages", str(write_german(sift_env / "de")))
    found = rows(data)
    asked = found["as asked"]["recall"]
    translated = found["phrases in the documents' language"]["recall"]
    english = data["modes"]["hybrid"]
    assert translated["5"] == english["recall@5"] == round(5 / 6, 4)  # type: ignore[index]
    assert translated["5"] >= asked["5"]  # type: ignore[index,operator]
    understood = [c.body["messages"][-1]["content"] for c in fake_anthropic.calls("understand")]
    assert len(understood) == 6
    assert all("The knowledge base is written in English; this message is in German." in u
               for u in understood)


def test_a_translation_of_a_question_the_dataset_lacks_is_refused(tmp_path: Path) -> None:
    dataset = load(write_beir(tmp_path / "tiny"))
    root = write_german(tmp_path / "de")
    (root / "fr.jsonl").write_text('{"_id": "q42", "text": "Quoi ?"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="q42"):
        load_translations(root, dataset)
    assert main(["eval", str(tmp_path / "tiny"), "--languages", str(tmp_path / "none")]) != 0
