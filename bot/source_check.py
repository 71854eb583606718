"""Sources checked before anything starts: a folder that is not there is a settings mistake,
said in one sentence by `sift sync`, by `sift serve` and by a reload of sift.toml alike."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from rag.errors import ConfigError

if TYPE_CHECKING:
    from bot.settings import Settings


def check_folders(settings: Settings, names: Collection[str] | None = None) -> None:
    """ConfigError naming the first folder source (of `names`, default all) whose folder is
    missing, and the file to correct."""
    where = f" in {settings.config}" if settings.config else ""
    for source in settings.resolved_sources:
        if (names is not None and source.name not in names) or source.kind != "folder":
            continue
        if source.path is None:
            problem = f"Source '{source.name}' is a folder but has no `path`{where}."
        elif not source.path.is_dir():
            problem = (f"Source '{source.name}': the folder {source.path} does not exist; "
                       f"correct its `path`{where}.")
        else:
            continue
        raise ConfigError(problem, user_message=problem)
