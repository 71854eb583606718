"""Citation post-check: invalid markers removed, the rest renumbered 1..k by appearance."""

from __future__ import annotations

import pytest

from rag.citations import has_uncited_claims, renumber

CASES = [
    ("in order", "A [1]. B [2].", 2, "A [1]. B [2].", (1, 2), 0),
    ("renumbered by appearance", "A [3]. B [1]. C [3].", 3, "A [1]. B [2]. C [1].", (3, 1), 0),
    ("out of range removed", "A [7]. B [2].", 4, "A. B [1].", (2,), 1),
    ("only invalid", "Claim [7].", 4, "Claim.", (), 1),
    ("comma list split", "A [1, 2].", 2, "A [1][2].", (1, 2), 0),
    ("list with a bad one", "A [2, 9, 1].", 2, "A [1][2].", (2, 1), 1),
    ("adjacent markers", "A [2][1].", 2, "A [1][2].", (2, 1), 0),
    ("duplicate in one list", "A [1, 1].", 1, "A [1].", (1,), 0),
    ("zero is invalid", "A [0].", 3, "A.", (), 1),
    ("code untouched", "Run `x[0]` then [1]. ```\nd[5]\n```", 1,
     "Run `x[0]` then [1]. ```\nd[5]\n```", (1,), 0),
    ("links untouched", "See [the guide](https://x) [1].", 1, "See [the guide](https://x) [1].",
     (1,), 0),
    ("no markers", "Nothing cited.", 3, "Nothing cited.", (), 0),
]


@pytest.mark.parametrize(("name", "text", "count", "expected", "sources", "dropped"), CASES,
                         ids=[c[0] for c in CASES])
def test_renumber(name: str, text: str, count: int, expected: str,
                  sources: tuple[int, ...], dropped: int) -> None:
    result = renumber(text, count)
    assert (result.text, result.sources, result.dropped) == (expected, sources, dropped)


@pytest.mark.parametrize(("text", "sources", "flagged"), [
    ("The key rotates every 30 days.", (), True),
    ("The key rotates every 30 days [1].", (1,), False),
    ("", (), False),
    ("```\ncode\n```", (), False),
])
def test_uncited_claims(text: str, sources: tuple[int, ...], flagged: bool) -> None:
    assert has_uncited_claims(text, sources) is flagged
