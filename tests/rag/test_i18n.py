"""Sift's own sentences in six languages: complete catalogues, the same placeholders, English
as the fallback, and the platforms' locale tags read as one of them."""

from __future__ import annotations

import string

import pytest

from bot.slack import home
from rag import i18n, messages
from rag.i18n import from_accept_language, speaking, supported, tr

SENTENCES = [value for name, value in vars(messages).items()
             if name.isupper() and isinstance(value, str)]
HOME = [home.INTRO, home.HOW_TO_ASK, home.WHAT_I_KNOW, home.NO_SOURCES, home.RECENT,
        home.NOTHING_YET]


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("language", [code for code in i18n.LANGUAGES if code != "en"])
def test_every_sentence_is_translated_with_its_placeholders(language: str) -> None:
    catalogue = i18n._catalogue(language)
    missing = [s for s in [*SENTENCES, *HOME] if s not in catalogue]
    assert not missing, f"{language} lacks {missing[:3]}"
    for english, translated in catalogue.items():
        assert fields(translated) == fields(english), (language, english)
        assert translated != english or english in ("Sources",), (language, english)


@pytest.mark.parametrize(("tag", "expected"), [
    ("de-DE", "de"), ("pt_BR", "pt"), ("ja", "ja"), ("FR-ca", "fr"), ("es-419", "es"),
    ("en-GB", "en"), ("nl-NL", ""), ("", "")])
def test_platform_locale_tags(tag: str, expected: str) -> None:
    assert supported(tag) == expected


@pytest.mark.parametrize(("header", "expected"), [
    ("de-DE,de;q=0.9,en;q=0.8", "de"),
    ("nl-NL, fr;q=0.5, ja;q=0.7", "ja"),  # the most preferred one Sift speaks
    ("en;q=0.1, pt-BR", "pt"),
    ("es;q=0, fr;q=0.2", "fr"),  # q=0: not acceptable
    ("*", ""), ("", ""), ("de;q=oops, fr", "fr")])
def test_accept_language(header: str, expected: str) -> None:
    assert from_accept_language(header) == expected


def test_sentences_follow_the_language_in_force_with_english_as_the_fallback() -> None:
    assert tr(messages.NO_ANSWER) == messages.NO_ANSWER
    with speaking("de-AT"):
        assert tr(messages.NO_ANSWER) == \
            "Ich habe in der Wissensdatenbank keine Antwort darauf gefunden."
        assert tr("A sentence no catalogue has.") == "A sentence no catalogue has."
        assert messages.with_reference(messages.INTERNAL_ERROR, "c0ffee") == \
            "Bei mir ist etwas schiefgelaufen. (Referenz: c0ffee)"
    with speaking("nl-NL"):  # no Dutch catalogue: English
        assert tr(messages.BUSY) == messages.BUSY
    assert tr(messages.SHARE_LABEL, "ja") == "チャンネルに共有"
    assert i18n.current() == "en"  # the block ended


def test_the_app_home_in_french() -> None:
    with speaking("fr-FR"):
        view = home.home_view([], [])
    texts = [b["text"]["text"] for b in view["blocks"] if "text" in b and b["type"] == "section"]
    assert texts[0].startswith("*Sift répond aux questions")
    assert "Aucune source n'est encore configurée." in texts[2]
