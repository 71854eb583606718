"""Follow-ups without a model: "and in Toronto?" carries the previous question's subject."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.heuristic import STOPWORDS
from rag.types import Turn

# A message that opens like this continues the previous question rather than asking anew.
_OPENER = re.compile(
    r"^\s*(?:(?:and|but|also|ok(?:ay)?|so)[\s,]+)*"
    r"(?:(?:what|how)\s+about|same\s+(?:for|in|with)|and|also|or|what\s+if|even)\b[\s,]*",
    re.IGNORECASE)
# "And how do I request PTO?" opens like a follow-up but asks a question of its own.
_NEW_QUESTION = re.compile(
    r"(?:how|what|who|whom|where|when|why|which|can|could|do|does|did|is|are|should|will)\b",
    re.IGNORECASE)
# Words that point back at the previous question's subject.
_BACK_REFERENCE = frozenset(
    ["it", "that", "this", "they", "them", "those", "these", "there", "one", "ones"])
_WORD = re.compile(r"[\w][\w'.-]*[\w]|\w", re.UNICODE)
# A back-reference only makes a message a follow-up when it says little else: "who approves
# it?" is one, "does the VPN client log it when a laptop is lost?" stands on its own.
MAX_CONTENT_WORDS = 3


def _content_words(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in STOPWORDS
            and w not in _BACK_REFERENCE]


def _is_follow_up(text: str) -> bool:
    if _OPENER.match(text):
        remainder = _OPENER.sub("", text, count=1).strip(" ?.!")
        return bool(remainder) and not _NEW_QUESTION.match(remainder)
    words = {m.group(0).lower() for m in _WORD.finditer(text)}
    return bool(words & _BACK_REFERENCE) and len(_content_words(text)) <= MAX_CONTENT_WORDS


def _earlier(history: Sequence[Turn]) -> tuple[str, str]:
    """The last question asked, carried when it was itself a follow-up, and the question that
    last stood alone (the subject of the conversation)."""
    asked = [t.text.strip() for t in history if t.role == "user" and t.text.strip()]
    if not asked:
        return "", ""
    before = carry_subject(asked[-1], [Turn("user", text) for text in asked[:-1]])
    return before.standalone, before.subject or before.standalone


@dataclass(frozen=True)
class Carried:
    standalone: str  # the message as a question that stands alone
    subject: str = ""  # the question that last stood alone ("" when this one does)


def carry_subject(text: str, history: Sequence[Turn]) -> Carried:
    """A follow-up's remainder joined to the question it follows ("What is the limit for client
    dinners in Toronto?"), or a back-reference with the earlier question's words beside it
    ("who approves it (expense limit client dinners)?"). Anything else stays as written."""
    previous, subject = _earlier(history) if history and _is_follow_up(text) else ("", "")
    if not previous:
        return Carried(text)
    remainder = _OPENER.sub("", text, count=1).strip().rstrip("?.! ")
    if remainder != text.strip().rstrip("?.! "):
        return Carried(f"{previous.rstrip('?.! ')} {remainder}?", subject)
    return Carried(f"{text.strip().rstrip('?.! ')} ({' '.join(_content_words(previous))})?",
                   subject)
