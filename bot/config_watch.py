"""Which sources sift.toml names now, so a running `sift serve` stops syncing a removed one."""

from __future__ import annotations

import logging
from pathlib import Path

from bot.settings import Settings, build_settings, config_path
from rag.errors import ConfigError

log = logging.getLogger(__name__)


class ConfiguredSources:
    """The source names of the configuration on disk, read again whenever the file changes
    (or appears). A server keeps the configuration it started with; what this adds is that it
    never re-adds a source a newer sift.toml removed (and `sift sync` then pruned)."""

    def __init__(self, started: Settings, config: Path | None = None) -> None:
        self._config = config  # --config as given at start; else SIFT_CONFIG or ./sift.toml
        self._names = {s.name for s in started.resolved_sources}
        self._started = set(self._names)
        self._stamp = self._file_stamp()

    def _file_stamp(self) -> tuple[Path | None, float]:
        path = config_path(self._config)
        try:
            return path, path.stat().st_mtime if path is not None else 0.0
        except OSError:  # removed between the look and the stat: as if absent
            return None, 0.0

    def names(self) -> set[str]:
        """The names configured now; the last readable ones while the file does not parse."""
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return self._names
        self._stamp = stamp
        try:
            current = {s.name for s in build_settings(self._config).resolved_sources}
        except ConfigError as exc:
            log.warning("sift.toml changed but cannot be read (%s); this server goes on with "
                        "the sources it has", exc.user_message)
            return self._names
        added = sorted(current - self._started)
        if added:
            log.warning("sift.toml now also names source %s: restart sift serve to sync it",
                        ", ".join(repr(n) for n in added))
        self._names = current
        return current
