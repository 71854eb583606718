"""The output policy on its own: which links stay live, what becomes inert, what leaks."""

from __future__ import annotations

import pytest

from rag import prompts
from rag.output_policy import OutputPolicy, hosts_of

CITED = "https://docs.example/runbook?id=7"
POLICY = OutputPolicy(["wiki.example"])


@pytest.mark.parametrize(("text", "kept"), [
    ("[the wiki](https://wiki.example/a/b)", "[the wiki](https://wiki.example/a/b)"),
    ("see https://wiki.example/x.", "https://wiki.example/x"),
    (f"[runbook]({CITED})", f"[runbook]({CITED})"),
    ("<https://wiki.example/ok|fine>", "<https://wiki.example/ok|fine>"),
])
def test_links_to_cited_sources_and_allowed_hosts_stay_live(text: str, kept: str) -> None:
    assert kept in POLICY.links(text, [CITED])


@pytest.mark.parametrize(("text", "shown"), [
    ("[here](http://evil.example/steal)", "here (evil[.]example/steal)"),
    ("[runbook](https://docs.example/other)", "runbook (docs[.]example/other)"),
    ("[x](https://WIKI.example.evil.example/)", "x (WIKI[.]example[.]evil[.]example/)"),
    ("[x](http://wiki.example\\@evil.example/)", "x ("),
    ("mailto:a@evil.example", "mailto[:]a[@]evil[.]example"),
])
def test_other_links_become_inert_text(text: str, shown: str) -> None:
    out = POLICY.links(text, [CITED])
    assert shown in out and "](" not in out and "://" not in out


def test_plain_text_and_citations_are_untouched() -> None:
    text = "Run `vault write` [1], then check the v1.2 release notes [2]."
    assert POLICY.links(text) == text


def test_canary_and_prompt_lines_are_leaks_ordinary_answers_are_not() -> None:
    assert POLICY.leaks(f"ok {prompts.CANARY.lower()}")
    assert POLICY.leaks("s-i-f-t canary 5e2d9a71c4")
    line = next(x for x in prompts.load("grade").splitlines() if len(x) > 60)
    assert POLICY.leaks(f"Sure: {line}")
    assert not POLICY.leaks("Rotate the key with the vault CLI [1].")


def test_a_half_written_canary_is_held_back_from_previews() -> None:
    assert POLICY.hold_back("The reference is SIFT-CAN") == "The reference is "
    assert POLICY.hold_back("Restart the agent ") == "Restart the agent "


def test_default_allowlist_is_the_hosts_of_source_urls() -> None:
    assert hosts_of(["https://kb.example/api", "wiki.example", "https://kb.example/x"]) == (
        "kb.example", "wiki.example")
