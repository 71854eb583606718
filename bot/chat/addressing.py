"""Cheap text checks, before any API call: does a message read like a question for Sift?"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z']+")
_WH = frozenset((
    "what", "what's", "whats", "how", "how's", "why", "when", "where", "where's", "who", "who's",
    "whom", "whose", "which", "anything", "any"))
# Auxiliaries start questions ("can you…") but also replies ("will do"): need three words.
_AUX = frozenset((
    "can", "could", "cant", "can't", "does", "doesn't", "do", "don't", "did", "didn't", "is",
    "isn't", "are", "aren't", "was", "were", "should", "would", "will", "won't", "has", "have",
    "may", "might", "shall"))
_REQUESTING = frozenset((
    "explain", "tell", "show", "give", "list", "find", "summarize", "summarise", "describe",
    "clarify", "help", "define", "compare", "please"))


def reads_like_question(text: str) -> bool:
    """A question or a request ("how do I…", "can you tell me…", "…?"), not small talk or
    thanks. `text` is plain text: platform markup already removed."""
    words = _WORD.findall(text.lower().replace("’", "'"))
    if not words:
        return False
    if "?" in text or words[0] in _WH or words[0] in _REQUESTING:
        return True
    return words[0] in _AUX and len(words) >= 3
