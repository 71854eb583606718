"""With a model: a captured thread as a short standalone Q&A, kept only when every sentence
of it is supported by the thread; otherwise (and without a model) the reply as written."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

from rag import prompts
from rag.ports import LLM, LLMRequest

log = logging.getLogger(__name__)
SCHEMA = {"type": "object", "properties": {"question": {"type": "string"},
                                           "answer": {"type": "string"}},
          "required": ["question", "answer"], "additionalProperties": False}
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-./]{2,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
SUPPORT = 0.6  # a sentence's share of words the thread must hold


def supported(text: str, source: str) -> bool:
    """Each sentence's words are mostly the thread's own: nothing was made up wholesale."""
    known = set(_WORD.findall(source.lower()))
    for sentence in _SENTENCE.split(text.strip()):
        words = _WORD.findall(sentence.lower())
        if words and sum(w in known for w in words) / len(words) < SUPPORT:
            return False
    return True


class ModelWriter:
    def __init__(self, llm: LLM, model: str, timeout_s: float = 30.0) -> None:
        self._llm = llm
        self._model = model
        self._timeout_s = timeout_s

    async def write(self, question: str, thread: Sequence[tuple[str, str]],
                    reply: str) -> tuple[str, str]:
        said = "\n".join(f"{who}: {text}" for who, text in thread)
        content = f"Question: {question}\n\nThread:\n{said}\n\nAccepted reply:\n{reply}"
        try:
            response = await self._llm.complete(LLMRequest(
                self._model, prompts.load("draft"), (("user", content),), max_tokens=600,
                json_schema=SCHEMA, timeout_s=self._timeout_s, purpose="draft"))
            data = json.loads(response.text)
            new_q, new_a = str(data["question"]).strip(), str(data["answer"]).strip()
        except Exception as exc:  # the draft still exists: the reply as written
            log.warning("could not rewrite the answer draft (%s); keeping the reply", exc)
            return question, reply
        if not new_q or not new_a or not supported(new_a, f"{question}\n{said}\n{reply}"):
            log.info("the model's draft says more than the thread; keeping the reply")
            return question, reply
        return new_q, new_a
