"""storage/ imports no other package of ours: its repositories fit the ports structurally."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STORAGE = Path(__file__).resolve().parents[2] / "storage"
FORBIDDEN = ("bot", "rag", "sync", "tests", "bench")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", sorted(STORAGE.rglob("*.py")), ids=lambda p: p.name)
def test_storage_module_imports_no_other_package_of_ours(path: Path) -> None:
    bad = {m for m in _imports(path) if m.split(".")[0] in FORBIDDEN}
    assert bad == set(), f"{path.relative_to(STORAGE.parent)} imports {sorted(bad)}"
