"""A running server's view of sift.toml's sources, read again whenever the file changes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from bot.config_watch import ConfiguredSources
from bot.settings import build_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SIFT_"):
            monkeypatch.delenv(name)


def sources(path: Path, *names: str) -> Path:
    path.write_text("".join(f'[[sources]]\nname = "{n}"\nkind = "folder"\n'
                            f'path = "{path.parent}"\n\n' for n in names))
    stamp = path.stat().st_mtime + 1 + len(names)  # a later modification time, as an editor's
    os.utime(path, (stamp, stamp))
    return path


def test_a_changed_file_is_read_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = sources(tmp_path / "sift.toml", "handbook", "wiki")
    watch = ConfiguredSources(build_settings(config), config)
    assert watch.names() == {"handbook", "wiki"}
    sources(config, "wiki")
    assert watch.names() == {"wiki"}
    config.write_text("[[sources]\nname = ")  # half-way through an edit
    os.utime(config, (config.stat().st_mtime + 9, config.stat().st_mtime + 9))
    with caplog.at_level(logging.WARNING):
        assert watch.names() == {"wiki"}  # the last readable names
    assert "cannot be read" in caplog.text
    caplog.clear()
    sources(config, "wiki", "runbooks")
    with caplog.at_level(logging.WARNING):
        assert watch.names() == {"wiki", "runbooks"}
    assert "'runbooks': restart sift serve to sync it" in caplog.text


def test_a_sift_toml_created_after_the_start_replaces_the_sample(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    watch = ConfiguredSources(build_settings(None), None)
    assert watch.names() == {"sample"}
    sources(tmp_path / "sift.toml", "handbook")
    assert watch.names() == {"handbook"}  # the sample is no longer configured
