"""/mcp through `sift serve`, driven by the MCP Inspector's own CLI (npm, pinned in
tests/tools/mcp-inspector, installed by `make inspector`): tools/list and tools/call over
streamable HTTP with a personal access token, and its refusal without a valid one."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rag.embed import LocalEmbedder
from storage.models import Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.scenarios.stack import ServedSift, serving, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

PINNED = Path(__file__).resolve().parents[1] / "tools" / "mcp-inspector" / "package.json"
ADA = "ada@example.com"


def inspector() -> Path:
    """Where `make inspector` put the pinned version (the Makefile's INSPECTOR path)."""
    version = json.loads(PINNED.read_text())["dependencies"]["@modelcontextprotocol/inspector"]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sift"
    found = cache / "mcp-inspector" / version / "node_modules" / ".bin" / "mcp-inspector"
    assert found.exists(), f"the MCP Inspector {version} is not installed: run `make inspector`"
    return found


async def run_cli(url: str, token: str, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(inspector()), "--cli", url, "--transport", "http",
        "--header", f"Authorization: Bearer {token}", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "MCP_CATALOG_PATH": os.devnull, "NO_COLOR": "1"})
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def parsed(out: str) -> Any:
    return json.loads(out)


@pytest.fixture
async def sift(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,
               embedder: LocalEmbedder, fake_anthropic: FakeAnthropic
               ) -> AsyncIterator[ServedSift]:
    settings = settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[])
    async with serving(settings, embedder) as served:
        yield served


async def test_the_inspector_lists_and_calls_the_tools(sift: ServedSift) -> None:
    url, token = f"{sift.base_url}/mcp", sift.app.tokens.create(ADA, expires_in=None).secret
    code, out, err = await run_cli(url, token, "--method", "tools/list")
    assert code == 0, err
    tools = {t["name"]: t for t in parsed(out)["tools"]}
    assert set(tools) == {"search", "ask", "get_document"}
    assert tools["search"]["inputSchema"]["required"] == ["query"]
    code, out, err = await run_cli(url, token, "--method", "tools/call", "--tool-name",
                                   "search", "--tool-arg", "query=WireGuard VPN profile",
                                   "--tool-arg", "limit=2")
    assert code == 0, err
    found = parsed(out)
    assert not found.get("isError") and found["structuredContent"]["passages"][0][
        "doc_id"] == "vpn"
    code, out, err = await run_cli(url, token, "--method", "tools/call", "--tool-name", "ask",
                                   "--tool-arg", "question=How do I set up the VPN?",
                                   "--tool-arg", "mode=fast")
    assert code == 0, err
    assert parsed(out)["structuredContent"]["status"] == "answered"
    [interaction] = sift.rows(Interaction)
    assert (interaction.platform, interaction.user_id) == ("mcp", ADA)


async def test_the_inspector_is_refused_without_a_valid_token(sift: ServedSift) -> None:
    code, out, err = await run_cli(f"{sift.base_url}/mcp", "sift_pat_forged", "--method",
                                   "tools/list")
    assert code != 0 and "search" not in out
    # It read the 401's challenge as the spec's: OAuth wanted (which a CI run cannot do).
    assert '"code":"auth_required"' in out + err, out + err
    assert sift.rows(Interaction) == []
