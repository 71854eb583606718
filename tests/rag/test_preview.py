"""Answer previews: what is safe to show while the model is still writing."""

from __future__ import annotations

import pytest

from rag.citations import renumber
from rag.preview import AnswerPreview, preview_text


@pytest.mark.parametrize(("raw", "shown"), [
    ("", ""),
    ("N", ""),  # may still become the refusal token
    ("NO_ANS", ""),
    ("NO_ANSWER", ""),
    ("NO_ANSWER: the excerpts do not say", ""),
    ("No, the", "No, the"),  # not the token: shown
    ("Rotate the key [", "Rotate the key"),  # an unfinished marker waits for its bracket
    ("Rotate the key [3", "Rotate the key"),
    ("Rotate the key [3,", "Rotate the key"),
    ("Rotate the key [3]. Then restart [1", "Rotate the key [1]. Then restart"),
    ("Rotate the key [3]. Then restart [1].", "Rotate the key [1]. Then restart [2]."),
    ("Per the runbook [7], rotate [2]", "Per the runbook, rotate [1]"),  # [7] does not exist
])
def test_preview_text(raw: str, shown: str) -> None:
    assert preview_text(raw, 3) == shown


def test_every_preview_grows_into_the_final_text() -> None:
    final = "Open Vault [2]. Run `vault write db/rotate [1]` [2][3].\n\nThen verify [1]."
    previews = [preview_text(final[:end], 3) for end in range(len(final) + 1)]
    shown = [p for p in previews if p]
    assert shown[-1] == renumber(final, 3).text
    # Apart from whitespace the final strip removes, each preview is where the answer is going.
    assert all(renumber(final, 3).text.startswith(p.rstrip()) for p in shown)


async def test_previews_are_whole_texts_and_skip_repeats() -> None:
    seen: list[str] = []

    async def sink(text: str) -> None:
        seen.append(text)

    preview = AnswerPreview(2, sink)
    for delta in ["Use ", "the ", "portal ", "[", "2", "]", ".", ""]:
        await preview.feed(delta)
    assert seen == ["Use", "Use the", "Use the portal", "Use the portal [1]",
                    "Use the portal [1]."]


async def test_a_failing_sink_stops_previews_without_failing_the_answer(
        caplog: pytest.LogCaptureFixture) -> None:
    calls = 0

    async def sink(text: str) -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError("the chat platform refused the update")

    preview = AnswerPreview(1, sink)
    for delta in ["One ", "two ", "three"]:
        await preview.feed(delta)
    assert calls == 1
    assert "answer preview failed" in caplog.text
