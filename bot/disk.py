"""Readiness: whether the disk has room for the database and the data directory."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

from bot.web import Health, HealthCheck


def _existing(path: Path) -> Path:
    """The path, or its nearest existing parent (the data directory may not exist yet)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _free_bytes(path: Path) -> int:
    stats = os.statvfs(_existing(path))
    return stats.f_bavail * stats.f_frsize


def disk_room(places: Mapping[str, Path], min_free_bytes: int) -> HealthCheck:
    """A check that fails, naming the full disk, when any of `places` (what -> where: "the
    database", "the data directory") has less than `min_free_bytes` free: with no room,
    every question fails (nothing can be saved), so a load balancer should send none."""

    def check() -> Health:
        short = []
        for what, where in places.items():
            free = _free_bytes(where)
            if free < min_free_bytes:
                short.append(f"{what} ({where}: {free / 2**20:.1f} MB free)")
        if not short:
            return Health(True)
        return Health(False, f"disk full: no room for {' and '.join(short)}; Sift needs "
                      f"{min_free_bytes / 2**20:g} MB free (SIFT_STORAGE__MIN_FREE_MB)")

    async def run() -> Health:
        return await asyncio.to_thread(check)

    return run
