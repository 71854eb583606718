"""The composition root's storage wiring and the /healthz database check."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.settings import Settings
from bot.web import Health
from tests.storage.builders import answer, cand


def _app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str = "") -> App:
    monkeypatch.delenv("SIFT_DATABASE_URL", raising=False)
    return App(Settings(data_dir=tmp_path / "data", database_url=url))


def test_default_database_lives_in_the_data_dir(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(tmp_path, monkeypatch)
    app.database.upgrade()
    assert (tmp_path / "data" / "sift.db").exists()
    assert app.database is app.database
    # The repositories work over the same database: a recorded answer can be voted on.
    iid = app.interactions.record(answer("q", [cand("mfa", score=0.9, cited=True)]))
    app.feedback.vote(iid, "U1", 1, "terminal")
    assert app.feedback.votes(iid) == {"U1": 1}


async def test_health_check_reports_the_database(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    ok = _app(tmp_path, monkeypatch).health_checks()["database"]
    assert await ok() == Health(True)
    down = _app(tmp_path, monkeypatch, "postgresql+psycopg://sift:pw@127.0.0.1:1/sift"
                "?connect_timeout=2").health_checks()["database"]
    health = await down()
    assert not health.ok
    assert "Cannot reach the database at postgresql+psycopg://sift:***@127.0.0.1:1/sift" in (
        health.detail)
