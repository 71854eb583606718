"""`sift db upgrade|purge` and `sift report` against a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import inspect

from bot.cli import main
from rag.types import AnswerStatus
from storage.columns import utc_now
from storage.db import Database
from storage.interactions import InteractionRepository
from tests.storage.builders import answer
from tests.storage.clock import Clock
from tests.storage.sample import record_sample


@pytest.fixture
def db_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "empty.db"
    path.touch()  # an empty file, as `touch` leaves it
    monkeypatch.setenv("SIFT_DATABASE_URL", f"sqlite:///{path}")
    monkeypatch.delenv("SIFT_CONFIG", raising=False)
    return path


def test_upgrade_an_empty_file_then_report(db_file: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 1
    assert "has no Sift tables: run `sift db upgrade` first." in capsys.readouterr().err
    head = Database(f"sqlite:///{db_file}").head_revision()
    assert main(["db", "upgrade"]) == 0
    assert f"migrated from empty to revision {head}" in capsys.readouterr().out
    assert "interactions" in inspect(Database(f"sqlite:///{db_file}").engine).get_table_names()
    assert main(["db", "upgrade"]) == 0
    assert f"is up to date (revision {head})" in capsys.readouterr().out
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "Sift report: the last 7 days" in out
    assert "no votes in the window" in out
    assert "Never retrieved (all time): 0 synced documents\n  none" in out


def test_report_on_a_recorded_sample(db_file: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    db = Database(f"sqlite:///{db_file}")
    db.upgrade()
    record_sample(db, Clock(utc_now()))
    assert main(["report", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["statuses"] == {"total": 6, "answered": 3, "no_answer": 2, "degraded": 1,
                                "error": 0, "not_indexed": 0}
    assert data["feedback"]["up_ratio"] == 0.5
    assert {m["mode"]: m["thumbs_up_rate"] for m in data["modes"]} == {"accurate": 0.6,
                                                                       "fast": 0.0}
    assert [d["doc_id"] for d in data["low_grade"]] == ["legacy-vpn"]  # model grades only
    assert main(["report", "--since", "30d"]) == 0
    out = capsys.readouterr().out
    for expected in ("VPN keeps disconnecting", "What is the parking policy", "legacy-vpn",
                     "holidays", "accurate",
                     "3 thumbs up, 4 thumbs down (43% positive) on 5 of 7 answers"):
        assert expected in out
    # Piped (as here), rows and headings stay whole instead of folding at 80 columns.
    heading = ("Retrieved often, graded low by a model: candidates for rewriting (all time, "
               "average grade below 0.5)")
    assert heading in out.splitlines()
    [row] = [line for line in out.splitlines() if line.lstrip().startswith("legacy-vpn")]
    assert "Title of legacy-vpn" in row and "0.25" in row


def test_purge(db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = Database(f"sqlite:///{db_file}")
    db.upgrade()
    record_sample(db, Clock(utc_now()))
    assert main(["db", "purge", "--older-than", "5d"]) == 0
    out = capsys.readouterr().out
    assert "Purged what is older than 5 days" in out
    assert "interactions         1" in out and "feedback             1" in out


@pytest.mark.parametrize("bad", ["9x", "90", "-3d"])
def test_purge_rejects_a_bad_duration(db_file: Path, capsys: pytest.CaptureFixture[str],
                                      bad: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["db", "purge", f"--older-than={bad}"])
    assert exit_.value.code == 2
    assert "argument --older-than:" in capsys.readouterr().err


def test_report_prints_questions_as_typed(db_file: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    db = Database(f"sqlite:///{db_file}")
    db.upgrade()
    InteractionRepository(db).record(answer("[bold]urgent[/bold] VPN down?",
                                            status=AnswerStatus.NO_ANSWER))
    assert main(["report"]) == 0
    assert "[bold]urgent[/bold] VPN down?" in capsys.readouterr().out
