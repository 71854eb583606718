"""`sift channels`: policies set, shown, listed and removed; bad input named in one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main

Capture = pytest.CaptureFixture[str]


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "kb").mkdir()
    config = tmp_path / "sift.toml"
    config.write_text(f'[[sources]]\nname = "handbook"\nkind = "folder"\npath = "{tmp_path}/kb"\n'
                      f'[[sources]]\nname = "wiki"\nkind = "folder"\npath = "{tmp_path}/kb"\n')
    monkeypatch.setenv("SIFT_CONFIG", str(config))
    monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("SIFT_DATABASE_URL", raising=False)
    return tmp_path


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(["channels", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_set_show_list_remove(capsys: Capture) -> None:
    code, out, _ = run(capsys, "set", "slack", "C0123ABCD", "--respond", "questions",
                       "--sources", "handbook,wiki", "--label", "#help", "--json")
    assert code == 0
    assert json.loads(out) | {} == {
        "platform": "slack", "channel": "C0123ABCD", "label": "#help",
        "sources": ["handbook", "wiki"], "respond": "questions", "escalate_to": [],
        "audience": [], "only_when_confident": False, "private_answers": False,
        "follow_ups": True, "enabled": True, "stored": True}
    # a second `set` changes only the fields it names
    assert run(capsys, "set", "slack", "C0123ABCD", "--only-when-confident", "on")[0] == 0
    shown = json.loads(run(capsys, "show", "slack", "C0123ABCD", "--json")[1])
    assert shown["only_when_confident"] is True and shown["sources"] == ["handbook", "wiki"]
    listed = json.loads(run(capsys, "list", "--json")[1])
    assert [p["channel"] for p in listed] == ["C0123ABCD"]
    assert run(capsys, "remove", "slack", "C0123ABCD")[1].startswith("Removed")
    assert json.loads(run(capsys, "show", "slack", "C0123ABCD", "--json")[1])["stored"] is False


def test_the_default_and_direct_policies_can_be_set(capsys: Capture) -> None:
    assert run(capsys, "set", "slack", "*", "--follow-ups", "off")[0] == 0
    assert run(capsys, "set", "teams", "@direct", "--sources", "wiki")[0] == 0
    listed = {p["channel"]: p for p in json.loads(run(capsys, "list", "--json")[1])}
    assert listed["*"]["follow_ups"] is False and listed["@direct"]["sources"] == ["wiki"]


@pytest.mark.parametrize(("args", "sentence"), [
    (["set", "slack", "general", "--respond", "questions"],
     "'general' is not a Slack channel id"),
    (["set", "teams", "C0123ABCD"], "is not a Teams conversation id"),
    (["set", "slack", "C0123ABCD", "--sources", "handbook,intranet"],
     "Unknown source 'intranet' in `sources`; known sources: handbook, wiki, answers."),
    (["set", "slack", "C0123ABCD", "--only-when-confident", "on"],
     "`only_when_confident` applies to auto-answer channels"),
    (["set", "slack", "C0123ABCD", "--escalate-to", "alice"],
     "'alice' in `escalate_to` is not a Slack user id"),
    (["set", "slack", "C0123ABCD", "--experts", "U0DANA1,dana"],
     "'dana' in `experts` is not a Slack user id"),
])
def test_bad_input_is_refused_naming_the_field(capsys: Capture, args: list[str],
                                                sentence: str) -> None:
    code, _, err = run(capsys, *args)
    assert code == 1 and sentence in err and "Traceback" not in err
    assert json.loads(run(capsys, "list", "--json")[1]) == []  # nothing half-written


def test_an_unknown_but_well_formed_channel_is_accepted(capsys: Capture) -> None:
    assert run(capsys, "set", "slack", "C0NOTYET1", "--respond", "questions")[0] == 0
