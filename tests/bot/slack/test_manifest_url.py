"""`sift slack manifest --url`: the address Slack will call, from what a person types."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.cli import main


@pytest.fixture(autouse=True)
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("SIFT_CONFIG", "SIFT_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)


def request_urls(capsys: pytest.CaptureFixture[str], url: str) -> set[str]:
    assert main(["slack", "manifest", "--url", url]) == 0
    made = yaml.safe_load(capsys.readouterr().out)
    settings = made["settings"]
    return {settings["event_subscriptions"]["request_url"],
            settings["interactivity"]["request_url"],
            made["features"]["slash_commands"][0]["url"]}


@pytest.mark.parametrize("typed", [
    "abc.ngrok.app",  # no scheme: Slack calls HTTPS only
    "https://abc.ngrok.app/",
    "https://abc.ngrok.app/slack/events",  # pasted from the manifest itself: not doubled
    " https://abc.ngrok.app/slack/events/ ",
])
def test_what_people_type_becomes_one_https_events_url(capsys: pytest.CaptureFixture[str],
                                                       typed: str) -> None:
    assert request_urls(capsys, typed) == {"https://abc.ngrok.app/slack/events"}


def test_a_path_prefix_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    assert request_urls(capsys, "https://intranet.example.com/sift") == {
        "https://intranet.example.com/sift/slack/events"}


@pytest.mark.parametrize("typed", ["http://localhost:3978", "http://sift.example.com",
                                   "https://", "ftp://sift.example.com"])
def test_an_address_slack_cannot_call_is_one_sentence(capsys: pytest.CaptureFixture[str],
                                                      typed: str) -> None:
    assert main(["slack", "manifest", "--url", typed]) == 2
    out = capsys.readouterr()
    assert out.out == ""  # no manifest with a URL Slack would refuse
    assert out.err.startswith("sift: --url") and "https://" in out.err
    assert out.err.count("\n") == 1


def test_the_replace_the_example_note_only_where_the_example_is(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["slack", "manifest", "--url", "abc.ngrok.app"]) == 0
    assert "replace https://sift.example.com" not in capsys.readouterr().out
    assert main(["slack", "manifest"]) == 0  # no address known: the example, and the note
    assert "replace https://sift.example.com" in capsys.readouterr().out
