"""`sift llm check`: one line per role, through each provider's SDK client and fake."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from bot.cli import main
from tests.fakes.anthropic_server import failing
from tests.fakes.llm_rigs import PROVIDERS, Rig, running
from tests.fakes.openai_server import FakeOpenAI

LINE = re.compile(r"^(?P<role>fast|answer)\s+(?P<provider>\w+)\s+(?P<model>\S+): reachable; "
                  r"structured output (?P<structured>.+?); (?P<ms>[\d,]+) ms; "
                  r"(?P<tokens_in>\d+) tokens in, (?P<tokens_out>\d+) out$")


@pytest.fixture(autouse=True)
def settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("SIFT_") or name == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path / "data"))
    root = logging.getLogger()  # the CLI configures the root logger: put back afterwards
    monkeypatch.setattr(root, "handlers", root.handlers[:])
    monkeypatch.setattr(root, "level", root.level)


def check(rig: Rig, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    for name, value in rig.env.items():
        monkeypatch.setenv(name, value)
    code = main(["llm", "check"])
    return code, capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_each_role_is_called_and_reported(provider: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    async with running(provider, tmp_path) as rig:
        code, lines = await asyncio.to_thread(check, rig, monkeypatch, capsys)
        sent = [(r.kind, r.body["model"]) for r in rig.fake.requests]
    assert code == 0, lines
    assert lines[0].startswith(f"LLM: {provider}")
    found = [LINE.match(line) for line in lines[1:]]
    assert all(found), lines
    assert [(m["role"], m["provider"], m["model"], m["structured"]) for m in found if m] == [
        ("fast", provider, rig.fast_model, "yes"), ("answer", provider, rig.answer_model, "yes")]
    assert all(int(m["tokens_in"]) > 0 and int(m["tokens_out"]) > 0 for m in found if m)
    assert sent == [("check", rig.fast_model), ("check", rig.answer_model)]


async def test_a_server_refusing_structured_outputs_is_named_with_the_fallback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    async with running("openai", tmp_path) as rig:
        assert isinstance(rig.fake, FakeOpenAI)
        rig.fake.refuse_json_schema = True
        code, lines = await asyncio.to_thread(check, rig, monkeypatch, capsys)
    assert code == 0  # reachable: the plain call answered
    assert "structured output refused (HTTP 400 invalid_request_error: response_format " \
           "json_schema is not supported); try SIFT_LLM__STRUCTURED_OUTPUT=tool or json_mode" \
           in lines[1]


async def test_an_unreachable_model_says_why_and_fails(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    async with running("bedrock", tmp_path) as rig:
        rig.fake.script.append(failing("permission", kind="check"))
        code, lines = await asyncio.to_thread(check, rig, monkeypatch, capsys)
    assert code == 1
    assert lines[1] == (f"fast    bedrock   {rig.fast_model}: not reachable (permission: HTTP "
                        "403 AccessDeniedException: You don't have access to the model with "
                        "the specified model ID.)")
    assert LINE.match(lines[2])  # the answer model still answered
