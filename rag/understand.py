"""Understanding a message: standalone rewrite of follow-ups, search phrases, and its intent."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rag import messages, prompts
from rag.errors import LLMError
from rag.follow_up import carry_subject
from rag.i18n import tr
from rag.language import differs, english_name
from rag.ports import LLM, LLMRequest, TextSink
from rag.types import Intent, Question, Understanding, Usage

log = logging.getLogger(__name__)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "intent": {"type": "string", "enum": [i.value for i in Intent]},
        "standalone_question": {"type": "string"},
        "search_phrases": {"type": "array", "items": {"type": "string"}},
        "reply": {"type": "string"},
    },
    "required": ["intent", "standalone_question", "search_phrases", "reply"],
    "additionalProperties": False,
}
# Bare greetings and thanks are answered without an LLM or a search, whatever the mode.
_GREETING = re.compile(r"^\s*(hi|hello|hey|hiya|good (morning|afternoon|evening)|yo)\b[\s!.,]*$",
                       re.IGNORECASE)
_THANKS = re.compile(r"^\s*(thanks|thank you|thx|ty|cheers)\b[\s\w!.,]{0,20}$", re.IGNORECASE)

IMAGES_NOTE = ("The images above came with the message: write the standalone question so that "
               "it says what they show (error codes, messages, names), and put those into "
               "the search phrases.")


def passthrough(question: Question) -> Understanding:
    """The question as asked; a follow-up carries the previous question's subject (no model)."""
    if question.attached and not question.history:
        # "What does this mean?" beside a screenshot asks about the screenshot: what was read
        # is what the candidates are graded and quoted on; the person's words join the search.
        return Understanding(question.attached, (question.text, question.attached))
    carried = carry_subject(question.text, question.history)
    return Understanding(carried.standalone, (carried.standalone,), subject=carried.subject)


def rule_based(question: Question) -> Understanding | None:
    if _GREETING.match(question.text):
        return Understanding(question.text, (), Intent.SMALL_TALK, tr(messages.GREETING_REPLY))
    if _THANKS.match(question.text):
        return Understanding(question.text, (), Intent.SMALL_TALK, tr(messages.THANKS_REPLY))
    return None


def corpus_request(language: str, corpus_language: str) -> str:
    """What the analyst is told when the message and the documents differ in language: search
    phrases in the documents' language find what a search in the message's language misses."""
    if not differs(language, corpus_language):
        return ""
    corpus = english_name(corpus_language)
    return (f"\n\nThe knowledge base is written in {corpus}; this message is in "
            f"{english_name(language)}. Write the search_phrases in {corpus}: translate the "
            f"message's terms, keep product names and identifiers as they are.")


# The intent at the start of a reply still being written: `{"intent": "knowledge",` (the
# schema lists it first, and structured outputs keep that order).
_LEADING_INTENT = re.compile(r'^\s*\{\s*"intent"\s*:\s*"([a-z_]+)"')


def leading_intent(text: str) -> Intent | None:
    """The intent at the start of a partial understanding; None until it is whole (or when
    the reply does not start with a known one)."""
    found = _LEADING_INTENT.match(text)
    if found is None:
        return None
    try:
        return Intent(found.group(1))
    except ValueError:
        return None


def parse_understanding(text: str, question: Question) -> Understanding:
    """Validate the analyst's JSON; anything unusable falls back to the question as asked."""
    data = json.loads(text)
    intent = Intent(data["intent"])
    # Only a follow-up needs rewriting. A first question stays as asked, word for word, so
    # that grades (cached per question) and the answer are about what the person wrote.
    rewritten = str(data.get("standalone_question") or "").strip()
    # A question with an image is rewritten too: what the image shows is what is graded.
    standalone = rewritten if (question.history or question.images) and rewritten \
        else question.text
    phrases = tuple(p.strip() for p in data.get("search_phrases") or [] if str(p).strip())[:3]
    reply = str(data.get("reply") or "").strip()
    if intent is not Intent.KNOWLEDGE and not reply:
        reply = tr(messages.ABOUT_BOT_REPLY if intent is Intent.ABOUT_BOT
                   else messages.GREETING_REPLY)
    return Understanding(standalone, phrases or (standalone,), intent, reply)


def _intent_reader(on_intent: Callable[[Intent], None]) -> TextSink:
    """A stream's text sink that tells the intent once the reply has begun with it."""
    written: list[str] = []
    told = False

    async def read(delta: str) -> None:
        nonlocal told
        if told or len(written) > 40:  # told, or the reply does not begin with its intent
            return
        written.append(delta)
        intent = leading_intent("".join(written))
        if intent is not None:
            told = True
            on_intent(intent)

    return read


class Understander:
    def __init__(self, llm: LLM | None, model: str, timeout_s: float = 10.0) -> None:
        self._llm = llm
        self._model = model
        self._timeout_s = timeout_s

    async def understand(self, question: Question, use_llm: bool, *, language: str = "",
                         corpus_language: str = "",
                         on_intent: Callable[[Intent], None] | None = None
                         ) -> tuple[Understanding, Usage]:
        """`language`: the message's (rag/language.py); `corpus_language`: the documents'.

        `on_intent` is told the intent as soon as it is known: from the model, as soon as
        its reply has begun with it (the rest is still being written); otherwise with the
        whole understanding. It is told once."""
        told: list[Intent] = []

        def tell(intent: Intent) -> None:
            if on_intent is not None and not told:
                told.append(intent)
                on_intent(intent)

        understood, usage = await self._understand(question, use_llm, language, corpus_language,
                                                   tell if on_intent else None)
        tell(understood.intent)
        return replace(understood, language=language, corpus_language=corpus_language), usage

    async def _understand(self, question: Question, use_llm: bool, language: str,
                          corpus_language: str, on_intent: Callable[[Intent], None] | None
                          ) -> tuple[Understanding, Usage]:
        quick = rule_based(question)
        if quick is not None:
            return quick, Usage()
        if self._llm is None or not use_llm:
            return passthrough(question), Usage()
        history = "\n".join(f"{t.role}: {t.text}" for t in question.history[-10:])
        content = (f"Conversation so far:\n{history}\n\n" if history else "") + \
            f"Message: {question.text}" + corpus_request(language, corpus_language)
        if question.images:  # what the image shows is what to search for
            content += "\n\n" + IMAGES_NOTE
        request = LLMRequest(model=self._model, system=prompts.load("understand"),
                             messages=(("user", content),), max_tokens=400, json_schema=SCHEMA,
                             timeout_s=self._timeout_s, purpose="understand",
                             images=question.images)
        try:
            response = await (self._llm.complete(request) if on_intent is None
                              else self._llm.stream(request, _intent_reader(on_intent)))
            understood = parse_understanding(response.text, question)
            if differs(language, corpus_language):  # the message's own words are searched too
                understood = replace(understood, across=True, search_phrases=tuple(
                    dict.fromkeys((*understood.search_phrases, understood.standalone))))
            return understood, response.usage
        except (LLMError, ValueError, KeyError, TypeError) as exc:
            # Understanding only sharpens the search; without it the question still gets one.
            log.warning("understanding failed, searching with the question as asked: %s", exc)
            return passthrough(question), Usage()
