"""sync/ may use rag's types, index and embedder, but never bot/, storage/ or tests."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SYNC = Path(__file__).resolve().parents[2] / "sync"
FORBIDDEN = ("bot", "storage", "tests", "bench")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", sorted(SYNC.rglob("*.py")), ids=lambda p: p.name)
def test_sync_module_imports_neither_bot_nor_storage(path: Path) -> None:
    bad = {m for m in _imports(path) if m.split(".")[0] in FORBIDDEN}
    assert bad == set(), f"{path.relative_to(SYNC.parent)} imports {sorted(bad)}"
