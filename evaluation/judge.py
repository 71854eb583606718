"""The LLM judge: is an answer faithful to its cited excerpts, and accurate against a reference?"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from evaluation import prompts
from evaluation.dataset import EvalQuery
from rag.errors import LLMError
from rag.ports import LLM, LLMRequest
from rag.types import Answer, AnswerStatus, Usage

log = logging.getLogger(__name__)

VERDICTS = ("supported", "unsupported", "no_claim")
FAITHFULNESS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdicts": {"type": "array", "items": {
        "type": "object",
        "properties": {"n": {"type": "integer"},
                       "verdict": {"type": "string", "enum": list(VERDICTS)}},
        "required": ["n", "verdict"],
        "additionalProperties": False,
    }}},
    "required": ["verdicts"],
    "additionalProperties": False,
}
ACCURACY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": [0, 1, 2]},
                   "reason": {"type": "string"}},
    "required": ["score", "reason"],
    "additionalProperties": False,
}
REFUSAL = -1  # the accuracy label of an appropriate refusal
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LIST_MARKER = re.compile(r"\d{1,3}[.)]")
_CONTENT = re.compile(r"[A-Za-z0-9]")


@dataclass(frozen=True)
class Judgement:
    """What the judge said about one answer; None where it did not (or could not) judge."""

    faithfulness: float | None = None
    accuracy: int | None = None
    accuracy_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    failures: int = 0


def sentences(text: str) -> list[str]:
    """The answer's sentences and list items, without empty lines or bare markup."""
    found: list[str] = []
    for line in text.splitlines():
        marker = ""
        for part in _SENTENCE.split(line.strip()):
            if _LIST_MARKER.fullmatch(part):  # "1." opens a list item, it ends no sentence
                marker = part + " "
            elif _CONTENT.search(part):
                found.append(marker + part)
                marker = ""
    return found


def answerable(query: EvalQuery) -> bool:
    return bool(query.answer or query.relevant)


def refusal_accuracy(query: EvalQuery) -> int:
    """A refusal is appropriate only when the set says the corpus holds no answer."""
    return 0 if answerable(query) else REFUSAL


def _excerpts(answer: Answer) -> str:
    chunks = {c.chunk.chunk_id: c.chunk for c in answer.candidates}
    blocks = []
    for citation in answer.citations:
        chunk = chunks.get(citation.chunk_id)
        if chunk is not None:
            body = chunk.text.replace("</excerpt>", "</ excerpt>")
            blocks.append(f'<excerpt n="{citation.n}" title="{chunk.title}">\n{body}\n</excerpt>')
    return "\n\n".join(blocks) or "(no excerpts were cited)"


def parse_faithfulness(text: str, count: int) -> float | None:
    """Supported over judged sentences (claims only); unknown numbers are ignored."""
    data = json.loads(text)
    verdicts: dict[int, str] = {}
    for item in data.get("verdicts", []) if isinstance(data, dict) else []:
        if isinstance(item, dict) and item.get("verdict") in VERDICTS:
            n = item.get("n")
            if isinstance(n, int) and 1 <= n <= count:
                verdicts.setdefault(n, str(item["verdict"]))
    if len(verdicts) < count:
        raise ValueError(f"verdicts for {len(verdicts)} of {count} sentences")
    claims = [v for v in verdicts.values() if v != "no_claim"]
    return claims.count("supported") / len(claims) if claims else None


def parse_accuracy(text: str) -> tuple[int, str]:
    data = json.loads(text)
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or score not in (0, 1, 2):
        raise ValueError(f"score {score!r} is not 0, 1 or 2")
    return int(score), str(data.get("reason", ""))


class Judge:
    """Calls the judge model through the `LLM` port; a failed call leaves that metric unset."""

    def __init__(self, llm: LLM, model: str, timeout_s: float = 60.0) -> None:
        self._llm = llm
        self._model = model
        self._timeout_s = timeout_s

    @property
    def model(self) -> str:
        return self._model

    async def judge(self, query: EvalQuery, answer: Answer) -> Judgement:
        started = time.perf_counter()
        usage, failures = Usage(), 0
        faithfulness, accuracy, reason = None, None, ""
        if answer.status is AnswerStatus.NO_ANSWER:
            accuracy, reason = refusal_accuracy(query), "refused"
        elif answer.status is AnswerStatus.ERROR or not answerable(query):
            accuracy = 0
            reason = "error" if answer.status is AnswerStatus.ERROR else "answered the unanswerable"
        else:
            if not answer.extractive:  # quoted excerpts are faithful by construction
                faithfulness, used, failed = await self._faithfulness(answer)
                usage, failures = usage + used, failures + failed
            if query.answer:
                verdict, used, failed = await self._accuracy(query, answer)
                usage, failures = usage + used, failures + failed
                accuracy, reason = verdict if verdict else (None, "")
        return Judgement(faithfulness, accuracy, reason, usage,
                         round((time.perf_counter() - started) * 1000, 2), failures)

    async def _ask(self, prompt: str, content: str, schema: dict[str, Any],
                   max_tokens: int) -> tuple[str, Usage]:
        request = LLMRequest(model=self._model, system=prompts.load(prompt),
                             messages=(("user", content),), max_tokens=max_tokens,
                             json_schema=schema, timeout_s=self._timeout_s, purpose="judge")
        response = await self._llm.complete(request)
        return response.text, response.usage

    async def _faithfulness(self, answer: Answer) -> tuple[float | None, Usage, int]:
        said = sentences(answer.text)
        if not said:
            return None, Usage(), 0
        numbered = "\n".join(f"{n}. {s}" for n, s in enumerate(said, start=1))
        content = f"Excerpts:\n\n{_excerpts(answer)}\n\nAnswer sentences:\n{numbered}"
        try:
            text, usage = await self._ask("judge_faithfulness", content, FAITHFULNESS_SCHEMA,
                                          60 * len(said) + 200)
            return parse_faithfulness(text, len(said)), usage, 0
        except (LLMError, ValueError) as exc:
            log.warning("faithfulness judge failed: %s", exc)
            return None, Usage(), 1

    async def _accuracy(self, query: EvalQuery,
                        answer: Answer) -> tuple[tuple[int, str] | None, Usage, int]:
        content = (f"Question: {query.text}\n\nReference answer:\n{query.answer}\n\n"
                   f"Answer to score:\n{answer.text}")
        try:
            text, usage = await self._ask("judge_accuracy", content, ACCURACY_SCHEMA, 300)
            return parse_accuracy(text), usage, 0
        except (LLMError, ValueError) as exc:
            log.warning("accuracy judge failed: %s", exc)
            return None, Usage(), 1
