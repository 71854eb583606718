"""`sift tokens create|list|revoke` against a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from storage.audit import AuditLog
from storage.columns import utc_now
from storage.db import Database
from storage.tokens import TokenRepository


@pytest.fixture
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'sift.db'}"
    monkeypatch.setenv("SIFT_DATABASE_URL", url)
    monkeypatch.delenv("SIFT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return url


def test_create_list_revoke(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", "create", "--as", "ada@example.com", "--label", "Claude"]) == 0
    out = capsys.readouterr().out
    secret = next(w for w in out.split() if w.startswith("sift_pat_"))
    assert "acts as ada@example.com and expires in 90 days" in out
    assert "cannot show it again" in out
    tokens = TokenRepository(Database(db_url))
    token = tokens.verify(secret)
    assert token is not None and token.email == "ada@example.com"

    assert main(["tokens", "create", "--as", "bob@example.com", "--expires", "never",
                 "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["email"] == "bob@example.com" and made["expires_at"] is None
    assert made["token"].startswith("sift_pat_") and made["state"] == "active"

    assert main(["tokens", "list", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [t["email"] for t in listed] == ["ada@example.com", "bob@example.com"]
    assert all("token" not in t and secret not in json.dumps(t) for t in listed)

    assert main(["tokens", "revoke", str(token.id)]) == 0
    assert "is revoked" in capsys.readouterr().out
    assert tokens.verify(secret) is None
    assert main(["tokens", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "revoked" in lines[0] and "ada@example.com" in lines[0] and secret not in lines[0]
    assert "active" in lines[1]
    actions = [e.action for e in AuditLog(Database(db_url)).since(utc_now().replace(year=2000))]
    assert sorted(actions) == ["token_created", "token_created", "token_revoked"]


@pytest.mark.parametrize(("argv", "sentence"), [
    (["tokens", "create", "--as", "ada"], "--as needs an email address (got 'ada')."),
    (["tokens", "create", "--as", "ada@example.com", "--expires", "soon"],
     "--expires: 'soon' is not a duration"),
    (["tokens", "revoke", "42"], "There is no token 42; `sift tokens list` shows their ids."),
])
def test_bad_input_is_one_sentence(db_url: str, capsys: pytest.CaptureFixture[str],
                                   argv: list[str], sentence: str) -> None:
    Database(db_url).upgrade()
    assert main(argv) != 0
    assert sentence in capsys.readouterr().err
    assert TokenRepository(Database(db_url)).list() == []
