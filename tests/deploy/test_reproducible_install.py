"""Installs are reproducible: uv.lock is current, the image recipe installs exactly the lock
(pinned base image, pinned uv, not editable), and an install as the image makes it, from a
copy of the sources, has the lock's versions, no torch, and the sample knowledge base."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
LOCK = tomllib.loads((ROOT / "uv.lock").read_text())
LOCKED: dict[str, set[str]] = {}  # a package may be locked at two versions, by marker
for package in LOCK["package"]:
    LOCKED.setdefault(package["name"], set()).add(package.get("version", ""))
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def test_the_lock_matches_pyproject() -> None:
    done = subprocess.run([str(UV), "lock", "--check", "--offline"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_distribution_name_is_ours_everywhere() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "sift-knowledge-bot"  # "sift" on PyPI is someone else's
    hints = []
    for folder in ("bot", "rag", "sync", "storage"):
        for path in (ROOT / folder).rglob("*.py"):
            hints += re.findall(r"pip install[^\n]*", path.read_text(encoding="utf-8"))
    hints += re.findall(r"pip install[^\n]*", (ROOT / "README.md").read_text())
    assert hints and not [h for h in hints if re.search(r"'sift\[|\bsift\[", h)]
    assert not [h for h in hints if "sift-knowledge-bot[" not in h and "[" in h], hints


def test_the_image_installs_the_lock_from_a_pinned_base() -> None:
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11\.\d+-slim-\w+$", DOCKERFILE, re.M)
    assert all(line.startswith("FROM ${PYTHON_IMAGE}") for line in DOCKERFILE.splitlines()
               if line.startswith("FROM "))
    [uv] = LOCKED["uv"]
    assert f"uv=={uv}" in DOCKERFILE  # the uv the lock pins
    installs = re.findall(r"^RUN .*\buv (?:sync|pip install)\b.*$", DOCKERFILE, re.M)
    assert installs and all("sync --frozen --no-editable" in line for line in installs)
    assert "-e " not in DOCKERFILE and "pip install -e" not in DOCKERFILE
    assert "/livez" in DOCKERFILE.split("HEALTHCHECK", 1)[1]


@pytest.mark.slow
def test_an_install_from_the_lock_as_the_image_makes_it(tmp_path: Path) -> None:
    """The Dockerfile's build stage, without Docker: the sources it copies, its `uv sync`."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "uv.lock", "README.md"):
        shutil.copy(ROOT / name, source / name)
    # The packages the Dockerfile copies (`COPY bot ./bot`): a package it forgot fails here.
    packages = re.findall(r"^COPY (\w+) \./\1$", (ROOT / "Dockerfile").read_text(), re.M)
    assert {"bot", "rag", "sync", "storage", "evaluation", "weaviate_server"} <= set(packages)
    for name in packages:
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv), "UV_PYTHON_DOWNLOADS": "never"}
    done = subprocess.run([str(UV), "sync", "--frozen", "--no-editable", "--offline",
                           "--extra", "local", "--python", sys.executable], cwd=source,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run([str(UV), "pip", "list", "--format", "json", "--python",
                             str(venv / "bin" / "python")], capture_output=True, text=True,
                            timeout=120, check=True)
    installed = {p["name"]: p["version"] for p in json.loads(listed.stdout)}
    assert "torch" not in installed and "sentence-transformers" not in installed
    assert {installed["sift-knowledge-bot"]} == LOCKED["sift-knowledge-bot"]
    drift = {n: v for n, v in installed.items() if v not in LOCKED.get(n, set())}
    assert drift == {}
    shutil.copytree(ROOT / "examples", venv / "lib" / "python3.11" / "site-packages"
                    / "examples")  # as the Dockerfile places it
    probe = ("import bot.settings as s; print(s.__file__); "
             "print(s.SAMPLE_KNOWLEDGE.is_dir())")
    shown = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120, check=True)
    where, sample = shown.stdout.split()
    assert where.startswith(str(venv)) and sample == "True"  # installed, not the sources


def test_the_install_step_says_one_line_instead_of_every_package() -> None:
    # `make run` on a fresh machine printed 155 "+ package==version" lines before Sift's own.
    planned = subprocess.run(["make", "-n", "-B", ".venv/.sift-installed"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    [sync] = [line for line in planned.splitlines() if "uv sync " in line]
    assert "--quiet" in sync and "--frozen" in sync
    assert "installing the packages pinned in uv.lock" in planned
