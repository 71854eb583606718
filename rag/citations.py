"""Citation post-check: drop markers that point nowhere, renumber the rest 1..k by appearance."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKER = re.compile(r"[ \t]*\[(\d+(?:\s*,\s*\d+)*)\]")
CODE_SPAN = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_CLAIM = re.compile(r"[A-Za-z0-9]{3,}")


@dataclass(frozen=True)
class Renumbered:
    text: str
    sources: tuple[int, ...]  # original excerpt numbers, in the order of their new numbers
    dropped: int  # markers (numbers) that pointed at excerpts that do not exist


def renumber(text: str, excerpt_count: int) -> Renumbered:
    """Rewrite `[n]` markers outside code so they run 1..k in order of first appearance."""
    order: dict[int, int] = {}
    dropped = 0

    def rewrite(match: re.Match[str]) -> str:
        nonlocal dropped
        kept = []
        for raw in match.group(1).split(","):
            number = int(raw)
            if 1 <= number <= excerpt_count:
                order.setdefault(number, len(order) + 1)
                if order[number] not in kept:
                    kept.append(order[number])
            else:
                dropped += 1
        lead = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip(" \t"))]
        return lead + "".join(f"[{n}]" for n in kept) if kept else ""

    pieces, last = [], 0
    for code in CODE_SPAN.finditer(text):
        pieces.append(_MARKER.sub(rewrite, text[last:code.start()]))
        pieces.append(code.group(0))
        last = code.end()
    pieces.append(_MARKER.sub(rewrite, text[last:]))
    sources = tuple(sorted(order, key=order.__getitem__))
    return Renumbered("".join(pieces).strip(), sources, dropped)


def has_uncited_claims(text: str, sources: tuple[int, ...]) -> bool:
    """An answer with substantive text but no valid citation at all makes unbacked claims."""
    return not sources and bool(_CLAIM.search(CODE_SPAN.sub("", text)))
