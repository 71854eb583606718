"""Placeholder registration for `sift report` until its issue lands."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    return None
