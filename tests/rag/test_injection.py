"""The prompt-injection corpus (injection_cases.toml) through the whole pipeline, fast and
accurate: nothing an attacker planted leaves Sift as a live link, and the prompts never leak."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from rag import prompts
from rag.output_policy import OutputPolicy
from rag.types import AnswerStatus, Mode, Question
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import chunk, make_llm, make_pipeline

QUESTION = "How do I reset my VPN token?"
ALLOWED_HOST = "wiki.example"  # the configured source's host
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")
_URL_HOST = re.compile(r"(?:https?|ftp)://(?:[^/\s@]*@)?([^/\s)>\]|\"'?#:]+)")


def _fill(text: str) -> str:
    return text.replace("{answer_prompt}", prompts.load("answer")).replace(
        "{canary}", prompts.CANARY)


def load_cases() -> list[dict[str, Any]]:
    data = tomllib.loads((Path(__file__).parent / "injection_cases.toml").read_text("utf-8"))
    return [{k: _fill(v) for k, v in case.items()} for case in data["case"]]


CASES = load_cases()


def problems(text: str) -> list[str]:
    """What a platform could still render as a live off-policy link, or a prompt leak.
    Written independently of rag/output_policy.py, as the attacker's checklist."""
    seen = _INVISIBLE.sub("", text).replace("\u3002", ".").casefold()
    found = [m for m in ("evil.example", "javascript:", "mailto:", "data:text", "<a ", "<img",
                         "//evil") if m in seen]
    found += [h for h in _URL_HOST.findall(seen) if h != ALLOWED_HOST]
    found += [f"link to {t[:30]}" for t in re.findall(r"\]\((\S*)", seen)
              if not t.startswith(f"https://{ALLOWED_HOST}/")]
    if re.sub(r"[\W_]", "", prompts.CANARY.casefold()) in re.sub(r"[\W_]", "", seen):
        found.append("canary")
    spaced = " ".join(seen.split())
    found += [f"prompt line: {line[:30]}" for text_ in prompts.all_texts()
              for line in (" ".join(raw.split()).casefold() for raw in text_.splitlines())
              if len(line) >= 40 and line in spaced]
    return found


@pytest.fixture
async def index(embedder: Any) -> MemoryIndex:
    return MemoryIndex()


async def _pipeline_for(case: dict[str, Any], index: MemoryIndex, embedder: Any,
                        llm: Any) -> Any:
    chunks = [chunk("vpn-reset", "Resetting a VPN token", case["document"]),
              chunk("vpn-basics", "VPN token basics",
                    "A VPN token is reset from the self-service portal; reset it when lost.")]
    await index.upsert(chunks, await embedder.embed_documents([c.text for c in chunks]))
    return make_pipeline(index, embedder, llm, policy=OutputPolicy([ALLOWED_HOST]))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
async def test_fast_mode_quotes_no_live_injection(case: dict[str, Any], index: MemoryIndex,
                                                  embedder: Any) -> None:
    pipeline = await _pipeline_for(case, index, embedder, None)
    answer = await pipeline.answer(Question(QUESTION, mode=Mode.FAST))
    assert answer.status in (AnswerStatus.ANSWERED, AnswerStatus.DEGRADED), answer.text
    assert problems(answer.text) == []
    if "live" in case:
        assert case["live"] in answer.text


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
async def test_accurate_mode_obeying_model_emits_no_live_injection(
        case: dict[str, Any], index: MemoryIndex, embedder: Any,
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Covers the VPN token reset.")
    fake_anthropic.answer_rule = lambda q, n: case["model"]  # the model obeys the injection
    pipeline = await _pipeline_for(case, index, embedder, make_llm(fake_anthropic.url))
    previews: list[str] = []

    async def collect(text: str) -> None:
        previews.append(text)

    answer = await pipeline.answer(Question(QUESTION, mode=Mode.ACCURATE), preview=collect)
    assert fake_anthropic.calls("answer"), "the answer model was not asked"
    assert answer.status in (AnswerStatus.ANSWERED, AnswerStatus.DEGRADED), answer.text
    assert problems(answer.text) == []
    assert [p for p in previews if problems(p)] == []
    if "live" in case:
        assert case["live"] in answer.text
