"""The dependency rules of ARCHITECTURE.md, held for every module of the packages below bot/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = {"bot", "rag", "sync", "storage", "evaluation", "weaviate_server", "tests", "bench"}
# Which of our packages each package may import (itself included).
ALLOWED = {"rag": {"rag"}, "sync": {"sync", "rag"}, "storage": {"storage"},
           # The offline evaluation runs rag over a corpus it indexes as sync would; what it
           # runs comes from bot/app.py as a Harness, so it never reaches into bot/.
           "evaluation": {"evaluation", "rag", "sync"},
           # Installing and supervising the managed server: only rag's errors.
           "weaviate_server": {"weaviate_server", "rag"}}
# Chat-platform SDKs stay in bot/; vendor clients only in the modules that adapt them.
PLATFORM_SDKS = {"slack_sdk", "slack_bolt", "microsoft_agents"}
# ...except the Web API client the Slack channels connector reads history with: the one
# AsyncWebClient factory lives beside it, so that bot/ (the chat adapter, the permission
# lookups) and sync/ share its retries and NO_PROXY handling without sync/ importing bot/.
PLATFORM_ADAPTERS = {"slack_sdk": {"sync/connectors/common/slack_client.py",
                                   "sync/connectors/slack_api.py"}}
VENDOR_ADAPTERS = {"weaviate": {"rag/index.py", "rag/index_schema.py"},
                   "anthropic": {"rag/llm.py", "rag/llm_clouds.py", "rag/messages_post.py"},
                   "openai": {"rag/llm_openai.py"},
                   "msal": {"sync/connectors/common/entra.py"},
                   # The SDKs' own HTTP library: only the console's sign-on names its
                   # errors (Authlib's client runs on it); no other module reaches under them.
                   "httpx2": {"bot/admin/oidc.py"}}


def imports(path: Path) -> set[str]:
    """Top-level names of every absolute import in one module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


MODULES = sorted(p for package in ALLOWED for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_keeps_the_dependency_rules(path: Path) -> None:
    name = str(path.relative_to(ROOT))
    package = name.split("/")[0]
    found = imports(path)
    foreign = found & OURS - ALLOWED[package]
    assert not foreign, f"{name} imports {sorted(foreign)}"
    sdks = {s for s in found & PLATFORM_SDKS if name not in PLATFORM_ADAPTERS.get(s, set())}
    assert not sdks, f"{name} imports {sorted(sdks)}"
    for sdk, adapters in VENDOR_ADAPTERS.items():
        assert sdk not in found or name in adapters, f"{name} imports {sdk}; only {adapters} may"


def test_the_rules_see_a_violation(tmp_path: Path) -> None:
    module = tmp_path / "sample.py"
    module.write_text("import bot.app\nfrom storage.db import x\nfrom . import sibling\n")
    assert imports(module) == {"bot", "storage"}
