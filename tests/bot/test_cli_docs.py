"""`sift docs`: overrides set, listed, shown and reset through the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from storage.db import Database
from storage.overrides import OverrideRepository


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Database:
    url = f"sqlite:///{tmp_path / 'sift.db'}"
    monkeypatch.setenv("SIFT_DATABASE_URL", url)
    monkeypatch.delenv("SIFT_CONFIG", raising=False)
    database = Database(url)
    database.upgrade()
    return database


def test_overrides_round_trip(db: Database, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "list"]) == 0
    assert "No overrides" in capsys.readouterr().out
    assert main(["docs", "boost", "guides/a.md", "--factor", "1.8", "--note", "canonical"]) == 0
    assert main(["docs", "hide", "guides/old.md"]) == 0
    rows = {r.doc_id: r for r in OverrideRepository(db).all()}
    assert (rows["guides/a.md"].kind, rows["guides/a.md"].factor) == ("boost", 1.8)
    assert rows["guides/old.md"].kind == "hide"
    capsys.readouterr()
    assert main(["docs", "list"]) == 0
    listed = capsys.readouterr().out
    assert "boost   x1.8" in listed and "guides/a.md" in listed and "(canonical)" in listed
    assert main(["docs", "show", "guides/a.md"]) == 0  # boosted, not hidden: left alone
    assert "is not hidden" in capsys.readouterr().out
    assert main(["docs", "show", "guides/old.md"]) == 0
    assert OverrideRepository(db).hidden() == []
    assert main(["docs", "reset", "guides/a.md"]) == 0
    assert main(["docs", "reset", "guides/a.md"]) == 0
    assert "had no override" in capsys.readouterr().out
    assert OverrideRepository(db).all() == []


@pytest.mark.parametrize("argv", [
    ["docs", "boost", "a", "--factor", "0.5"],
    ["docs", "demote", "a", "--factor", "1.5"],
    ["docs", "demote", "a", "--factor", "lots"],
])
def test_bad_factors_are_usage_errors(db: Database, argv: list[str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and "factor" in capsys.readouterr().err
    assert OverrideRepository(db).all() == []
