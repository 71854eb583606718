"""`sift --help` stays quick: it loads no heavy library (the models, the clients, the ORM)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sentence_transformers", "onnxruntime", "weaviate", "anthropic", "sqlalchemy",
         "alembic", "aiohttp", "pydantic", "bot.app")


def modules_after(*argv: str) -> set[str]:
    code = ("import sys\nfrom bot.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\nprint('=== modules', *sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(ROOT),
                                                      "PATH": "/usr/bin:/bin"})
    return set(done.stdout.split("=== modules")[-1].split())


@pytest.mark.parametrize("argv", [("--help",), ("ask", "--help"), ("sync", "--help"),
                                  ("report", "--help"), ("weaviate", "--help"), ()])
def test_help_imports_no_heavy_library(argv: tuple[str, ...]) -> None:
    loaded = modules_after(*argv)
    assert "bot.cli.ask" in loaded  # the parser was really built
    assert sorted(m for m in HEAVY if m in loaded) == []
