"""What the embedding model reads of a chunk: its words, without Markdown's syntax."""

from __future__ import annotations

from sync.chunk import embedding_text
from sync.plain import plain_text


def test_links_and_images_keep_their_words_and_drop_the_address() -> None:
    text = ("See [rotating keys](https://wiki.example.com/security/rotate_keys.md) and "
            '![the console](img/console.png "Console") or [the FAQ](faq.md).')
    assert plain_text(text) == "See rotating keys and the console or the FAQ."


def test_escapes_emphasis_and_heading_marks_go() -> None:
    assert plain_text(r"Version 2019\-03\-01 \(deprecated\)\.") == \
        "Version 2019-03-01 (deprecated)."
    assert plain_text("**Important** and *soon*, _really_ __now__") == \
        "Important and soon, really now"
    assert plain_text("## Rotating the keys") == "Rotating the keys"


def test_identifiers_keep_their_underscores() -> None:
    assert plain_text("Set max_items or BATCH_SIZE_LIMIT.") == "Set max_items or BATCH_SIZE_LIMIT."


def test_inline_code_is_kept_as_written_without_its_backticks() -> None:
    assert plain_text("Allow `s3:*` on `__init__` and **`arn:aws:s3:::bucket/*`**") == \
        "Allow s3:* on __init__ and arn:aws:s3:::bucket/*"


def test_fenced_code_is_kept_as_written_and_prose_after_it_is_plain_again() -> None:
    text = "\n".join([
        "Run:", "```python", "def f(*args, **kwargs):", "    return [x](y)", "```",
        "Then **check** it.", "~~~~", "a \\- b", "```", "still code", "~~~~", "_done_"])
    assert plain_text(text).split("\n") == [
        "Run:", "python", "def f(*args, **kwargs):", "    return [x](y)",
        "Then check it.", "a \\- b", "```", "still code", "done"]


def test_the_embedded_text_is_plain_but_keeps_title_and_section() -> None:
    assert embedding_text("VPN", "Setup > Linux", "Run **`wg-quick up`**, see [docs](x.md).") \
        == "VPN\nSetup > Linux\n\nRun wg-quick up, see docs."


def test_a_table_is_its_cells_and_a_list_its_items_without_the_syntax() -> None:
    text = "| Region | Limit |\n|---|:---:|\n| `eu-west-1` | **80** |\n\n- first\n- second\n"
    assert plain_text(text).split("\n") == ["Region | Limit", "eu-west-1 | 80", "first",
                                            "second"]


def test_raw_html_and_entities_are_words_not_markup() -> None:
    # The parser keeps raw HTML as text (it is never rendered from here), entities decoded.
    assert plain_text("AT&amp;T <b>bold</b> 5 &lt; 6") == "AT&T <b>bold</b> 5 < 6"
