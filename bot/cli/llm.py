"""`sift llm check`: one real call per model role, and what it showed about the provider."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.ports import LLM

CHECK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"], "additionalProperties": False}
CHECK_SYSTEM = ("# Role: connection check\n"
                'Reply with the JSON object {"ok": true} and nothing else.')


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("llm", help="the model service: check that each model answers",
                            description="Commands about the configured model service "
                            "(SIFT_LLM__PROVIDER; docs/llm-providers.md).")
    commands = parser.add_subparsers(dest="llm_command", metavar="COMMAND", required=True)
    check = commands.add_parser(
        "check", help="one small call per model role: reachable, structured output, latency",
        description="Make one small call to the fast model (understanding and grading) and "
        "one to the answer model, each asking for a JSON object through the configured "
        "structured output, and print one line per role. Exits 1 if a model is unreachable.")
    check.set_defaults(handler=_check)


@dataclass(frozen=True)
class RoleCheck:
    role: str
    provider: str
    model: str
    reachable: bool
    why_not: str = ""
    structured: str = ""  # "yes", or what went wrong
    latency_ms: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0

    def line(self) -> str:
        head = f"{self.role:<7} {self.provider:<9} {self.model}"
        if not self.reachable:
            return f"{head}: not reachable ({self.why_not})"
        return (f"{head}: reachable; structured output {self.structured}; "
                f"{self.latency_ms:,.0f} ms; {self.tokens_in} tokens in, {self.tokens_out} out")


async def check_role(llm: LLM, provider: str, role: str, model: str,
                     timeout_s: float) -> RoleCheck:
    """One structured call; if the server refuses the schema, one plain call for reachability."""
    from rag.errors import LLMError
    from rag.ports import LLMRequest

    request = LLMRequest(model=model, system=CHECK_SYSTEM, messages=(("user", "Check."),),
                         max_tokens=20, json_schema=CHECK_SCHEMA, timeout_s=timeout_s,
                         purpose="check")
    started = time.perf_counter()
    try:
        response = await llm.complete(request)
        structured = "yes" if _is_ok(response.text) else \
            f"no (the reply was not the JSON asked for: {response.text[:40]!r})"
    except LLMError as exc:
        if exc.kind != "bad_request":
            return RoleCheck(role, provider, model, False, f"{exc.reason}: {exc}")
        structured = f"refused ({exc}); try SIFT_LLM__STRUCTURED_OUTPUT=tool or json_mode"
        started = time.perf_counter()
        try:
            response = await llm.complete(LLMRequest(**{**request.__dict__,
                                                        "json_schema": None}))
        except LLMError as again:
            return RoleCheck(role, provider, model, False, f"{again.reason}: {again}")
    took = (time.perf_counter() - started) * 1000
    usage = response.usage
    return RoleCheck(role, provider, model, True, "", structured, took,
                     usage.input_tokens + usage.cache_read_tokens, usage.output_tokens)


def _is_ok(text: str) -> bool:
    try:
        return json.loads(text).get("ok") is True
    except (ValueError, AttributeError):
        return False


def _check(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings
    from bot.llm_setup import startup_line

    app = App(load_settings(args.config))
    settings = app.settings
    print(startup_line(settings, app.llm_endpoint))
    if app.llm is None:
        return 1

    async def run() -> list[RoleCheck]:
        assert app.llm is not None and app.llm_endpoint is not None
        try:
            roles = (("fast", settings.llm.fast_model), ("answer", settings.llm.answer_model))
            return [await check_role(app.llm, app.llm_endpoint.provider, role, model,
                                     settings.llm.timeout_s) for role, model in roles]
        finally:
            await app.aclose()

    results = asyncio.run(run())
    for result in results:
        print(result.line())
    return 0 if all(r.reachable for r in results) else 1
