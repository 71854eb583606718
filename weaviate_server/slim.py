"""Weaviate's module registry without the modules Sift never enables: a third less to build."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path

# The one Go file that imports every module and registers the enabled ones.
REGISTRY = "adapters/handlers/rest/configure_api.go"

# Sift brings its own vectors and starts Weaviate with ENABLE_MODULES empty, so no vectorizer,
# generative, reranker or cloud module is ever loaded. Their packages (and the AWS, Azure and
# Google Cloud SDKs they pull in) are 40% of what a build compiles. The filesystem backup
# module is tiny and lets an operator back the managed server up.
KEPT_MODULES = frozenset({"backup-filesystem"})

LEFT_OUT = ("not enabled: this Weaviate build leaves the module out (Sift builds it without "
            "the modules it never enables)")

_IMPORT = re.compile(r'^\t(\w+) "github\.com/weaviate/weaviate/modules/([\w-]+)"\n', re.M)
_CONSTANT = re.compile(r'^\s*(?:const\s+)?(Name|LegacyName)\s*=\s*"([^"]+)"', re.M)


class SlimmingError(Exception):
    """The registry has a shape this rewrite does not know; build the full server instead."""


def module_constants(package_dir: Path) -> dict[str, str]:
    """A module package's `Name` (and `LegacyName`) constants, read from its Go files."""
    found: dict[str, str] = {}
    for source in sorted(package_dir.glob("*.go")):
        if source.name.endswith("_test.go"):
            continue
        for constant, value in _CONSTANT.findall(source.read_text(encoding="utf-8")):
            found.setdefault(constant, value)
    if "Name" not in found:
        raise SlimmingError(f"no Name constant in {package_dir}")
    return found


def slim_registry(source: str, module_root: Path,
                  keep: Collection[str] = KEPT_MODULES) -> tuple[str, list[str]]:
    """`source` (the registry) without the modules outside `keep`, and the modules dropped.

    Each dropped module's import goes; its `Name` becomes the string it stands for, so that
    the lists of default modules and the "is it enabled?" checks still compile; registering it
    becomes a warning that names it, so enabling a module this build lacks is never silently
    ignored. Any other use of a dropped module raises `SlimmingError`.
    """
    dropped: list[str] = []
    for alias, name in _IMPORT.findall(source):
        if name in keep:
            continue
        constants = module_constants(module_root / "modules" / name)
        source = source.replace(f'\t{alias} "github.com/weaviate/weaviate/modules/{name}"\n', "")
        warning = (f'appState.Logger.WithField("module", {json.dumps(constants["Name"])})'
                   f".Warn({json.dumps(LEFT_OUT)})")
        source = source.replace(f"appState.Modules.Register({alias}.New())", warning)
        for constant, value in constants.items():
            source = re.sub(rf"\b{alias}\.{constant}\b", json.dumps(value), source)
        leftover = re.search(rf"\b{alias}\.\w+", source)
        if leftover:
            raise SlimmingError(f"{REGISTRY} uses {leftover.group(0)}, which the rewrite "
                                "does not know how to drop")
        dropped.append(name)
    if not dropped:
        raise SlimmingError(f"{REGISTRY} imports no module this rewrite would drop")
    return source, dropped
