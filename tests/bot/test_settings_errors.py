"""A newcomer's configuration mistakes: one sentence naming the culprit, the fix, no traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings import build_settings
from rag.errors import ConfigError
from tests.bot.test_settings import one_sentence


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.upper().startswith("SIFT_") or name.upper() == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path / "data"))


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run `sift` in-process: exit status 2 and one sentence on stderr, nothing else."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = [line for line in err.splitlines() if not line.startswith("sift: settings from ")]
    assert len(lines) == 1 and lines[0].startswith("sift: "), err
    sentence = lines[0].removeprefix("sift: ").strip()
    one_sentence(sentence)
    return sentence


@pytest.mark.parametrize(("variable", "suggested"), [
    ("SIFT_PORTT", "SIFT_PORT"), ("SIFT_SLACK_TOKEN", "SIFT_SLACK_BOT_TOKEN"),
    ("SIFT_WEAVIATE_PORT", "SIFT_WEAVIATE__RAFT_PORT or SIFT_WEAVIATE__HTTP_PORT")])
def test_a_misspelt_top_level_variable_is_named_with_the_nearest(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        variable: str, suggested: str) -> None:
    monkeypatch.setenv(variable, "xoxb-1")
    message = refused(capsys, "db", "upgrade")
    assert f"Unknown setting {variable} in the environment; did you mean {suggested}" in message
    assert "xoxb-1" not in message


def test_a_misspelt_nested_variable_suggests_the_real_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_WEAVIATE__HTP_PORT", "8080")
    with pytest.raises(ConfigError) as caught:
        build_settings()
    assert "SIFT_WEAVIATE__HTP_PORT" in caught.value.user_message
    assert "did you mean SIFT_WEAVIATE__HTTP_PORT" in caught.value.user_message


def test_the_test_suites_own_variables_are_not_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_TEST_POSTGRES_URL", "postgresql+psycopg://x@localhost/y")
    assert build_settings().port == 3978


def test_a_misspelt_source_key_is_named_not_the_missing_real_one(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text(f'[[sources]]\nname = "kb"\nknd = "folder"\npath = "{tmp_path}"\n')
    with pytest.raises(ConfigError) as caught:
        build_settings(path)
    message = caught.value.user_message
    one_sentence(message)
    assert f"Unknown setting 'sources.0.knd' in {path}; did you mean 'kind'?" == message


def test_sift_toml_in_the_current_directory_is_read_and_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sift.toml").write_text("port = 4100\n")
    assert build_settings().port == 4100
    (tmp_path / "sift.toml").write_text("[retrieval]\nlimt = 5\n")
    message = refused(capsys, "db", "upgrade")
    assert "sift.toml" in message and "did you mean 'limit'" in message


def test_the_cli_says_which_settings_file_it_read(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sift.toml").write_text("log_level = 'WARNING'\n")
    assert main(["db", "upgrade"]) == 0
    assert f"sift: settings from {tmp_path / 'sift.toml'}" in capsys.readouterr().err
    assert main(["db", "upgrade", "--config", str(tmp_path / "sift.toml")]) == 0
    assert "settings from" not in capsys.readouterr().err  # named on purpose: not repeated


def test_global_options_also_follow_the_command(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "other.toml"
    config.write_text("[retrieval]\nlimt = 5\n")
    for argv in (["db", "upgrade", "--config", str(config)],
                 ["--config", str(config), "db", "upgrade"]):
        assert "'retrieval.limt'" in refused(capsys, *argv)


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("SIFT_LOG_LEVEL", "LOUD", "SIFT_LOG_LEVEL is 'LOUD'; use one of DEBUG, INFO, WARNING"),
    ("SIFT_DATABASE_URL", "postgres://sift:pw@localhost/sift", "write postgresql+psycopg://"),
    ("SIFT_DATABASE_URL", "postgresql://sift@localhost/sift", "write postgresql+psycopg://"),
    ("SIFT_DATABASE_URL", "sqlite:/x.db", "'sqlite:/x.db' is not a database URL"),
    ("SIFT_DATABASE_URL", "sqlite:////nonexistent/dir/sift.db",
     "The folder /nonexistent/dir for SIFT_DATABASE_URL's SQLite file does not exist"),
    ("SIFT_WEAVIATE__MEMORY_LIMIT", "3.5GB", "'3.5GB' is not a size Go reads"),
    ("SIFT_WEAVIATE__DISK_ACCESS", "direct", "(got 'direct'): Input should be 'mmap' or 'pread'"),
])
def test_ordinary_mistakes_are_one_sentence(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str],
                                            variable: str, value: str, expected: str) -> None:
    monkeypatch.setenv(variable, value)
    message = refused(capsys, "db", "upgrade")
    assert expected in message
    assert "pw@" not in message
    assert not Path("/nonexistent").exists()


def test_a_missing_folder_source_is_one_sentence_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sift.toml").write_text(
        '[[sources]]\nname = "kb"\nkind = "folder"\npath = "/nonexistent/kb"\n')
    message = refused(capsys, "sync", "--dry-run")
    assert "Source 'kb'" in message and "/nonexistent/kb" in message
