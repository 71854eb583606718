"""A local fake of an OpenAI-compatible Chat Completions API (as vLLM, Ollama and OpenAI serve
it, and Azure OpenAI's deployments route): structured outputs, tools, streaming with usage."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from aiohttp import web

from tests.fakes.anthropic_server import _DELTA, FakeAnthropic, ModelLatency

# As OpenAI's error codes page shows them (status, type, code, message).
OPENAI_FAILURES = {
    "authentication": (401, "invalid_request_error", "invalid_api_key",
                       "Incorrect API key provided: sk-wrong. You can find your API key at "
                       "https://platform.openai.com/account/api-keys."),
    "permission": (403, "invalid_request_error", None,
                   "You are not allowed to sample from this model"),
    "model_not_found": (404, "invalid_request_error", "model_not_found",
                        "The model `llama-nonexistent` does not exist or you do not have access "
                        "to it."),
    "rate_limit": (429, "requests", "rate_limit_exceeded",
                   "Rate limit reached for requests per min (RPM). Please try again later."),
    "overloaded": (503, "server_error", None,
                   "The engine is currently overloaded, please try again later"),
    "context_too_long": (400, "invalid_request_error", "context_length_exceeded",
                         "This model's maximum context length is 8192 tokens. However, your "
                         "messages resulted in 9120 tokens. Please reduce the length of the "
                         "messages."),
    "server": (500, "server_error", None, "The server had an error while processing your "
               "request. Sorry about that!"),
}


class FakeOpenAI(FakeAnthropic):
    """Chat completions answered by the same rules as the Anthropic fake (the kind of call is
    read from the system message). `api_key` None accepts any caller, as a local server does."""

    def __init__(self, *, api_key: str | None = "sk-fake-openai",
                 models: tuple[str, ...] = ("llama3.1:8b", "qwen2.5:14b")) -> None:
        super().__init__()
        self.api_key = api_key
        self.models = models
        self.refuse_json_schema = False  # as a server without structured outputs answers
        self.raw: list[dict[str, Any]] = []  # each request's body as it arrived
        self.app.router.add_post("/v1/chat/completions", self._chat)
        self.app.router.add_get("/v1/models", self._models)
        self.app.router.add_post("/openai/deployments/{deployment}/chat/completions",
                                 self._azure)

    def _refused(self, request: web.Request, azure: bool) -> web.Response | None:
        if self.api_key is None:
            return None
        given = request.headers.get("api-key") if azure else \
            request.headers.get("Authorization", "").removeprefix("Bearer ")
        return None if given == self.api_key else self.failure_response("authentication", {})

    async def _models(self, request: web.Request) -> web.Response:
        return self._refused(request, False) or web.json_response({"object": "list", "data": [
            {"id": m, "object": "model", "created": 1733000000, "owned_by": "library"}
            for m in self.models]})

    async def _azure(self, request: web.Request) -> web.StreamResponse:
        if not request.query.get("api-version"):
            return web.json_response({"error": {"code": "404", "message": "Resource not "
                                                "found"}}, status=404)
        body = await request.json()
        body.setdefault("model", request.match_info["deployment"])
        return self._refused(request, True) or await self._complete(request, body)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return self._refused(request, False) or await self._complete(request,
                                                                     await request.json())

    async def _complete(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        self.raw.append(body)
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema" and self.refuse_json_schema:
            return web.json_response({"error": {"message": "response_format json_schema is not "
                                                "supported", "type": "invalid_request_error",
                                                "code": None}}, status=400)
        system = [m["content"] for m in body["messages"] if m["role"] == "system"]
        forced = ((body.get("tool_choice") or {}).get("function") or {}).get("name")
        same = {"model": body["model"], "max_tokens": body.get("max_tokens", 0),
                "system": [{"type": "text", "text": "".join(system)}],
                "messages": [m for m in body["messages"] if m["role"] != "system"],
                **({"tool_choice": {"name": forced}} if forced else {}),
                "include_usage": bool((body.get("stream_options") or {}).get("include_usage"))}
        return await self.answer(request, same, stream=bool(body.get("stream")))

    def failure_response(self, name: str, headers: dict[str, str]) -> web.Response:
        status, kind, code, message = OPENAI_FAILURES[name]
        return web.json_response({"error": {"message": message, "type": kind, "param": None,
                                             "code": code}}, status=status, headers=headers)

    @staticmethod
    def _usage(usage: dict[str, Any]) -> dict[str, Any]:
        cached = usage["cache_read_input_tokens"]
        prompt = usage["input_tokens"] + cached + usage["cache_creation_input_tokens"]
        return {"prompt_tokens": prompt, "completion_tokens": usage["output_tokens"],
                "total_tokens": prompt + usage["output_tokens"],
                "prompt_tokens_details": {"cached_tokens": cached}}

    def _message(self, body: dict[str, Any], system: str, text: str) -> dict[str, Any]:
        return {**super()._message(body, system, text), "include_usage": body["include_usage"]}

    def message_response(self, message: dict[str, Any]) -> web.Response:
        block = message["content"][0]
        reply: dict[str, Any] = {"role": "assistant", "content": block.get("text"),
                                 "refusal": None}
        if block["type"] == "tool_use":
            reply = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
                {"id": f"call_{block['id']}", "type": "function", "function": {
                    "name": block["name"], "arguments": json.dumps(block["input"])}}]}
        return web.json_response({
            "id": f"chatcmpl-{message['id']}", "object": "chat.completion",
            "created": int(time.time()), "model": message["model"],
            "choices": [{"index": 0, "message": reply, "logprobs": None,
                         "finish_reason": "tool_calls" if block["type"] == "tool_use"
                         else "stop"}],
            "usage": self._usage(message["usage"]), "system_fingerprint": "fp_fake"})

    async def _events(self, response: web.StreamResponse, message: dict[str, Any],
                      latency: ModelLatency, break_after: int | None) -> None:
        """chat.completion.chunk events: the role, a delta per word, the finish reason, then
        (stream_options.include_usage) a last chunk with no choices and the usage; [DONE]."""
        base = {"id": f"chatcmpl-{message['id']}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": message["model"]}

        async def send(choices: list[dict[str, Any]], **extra: Any) -> None:
            data = json.dumps({**base, "choices": choices, **extra})
            await response.write(f"data: {data}\n\n".encode())

        text, usage = message["content"][0]["text"], message["usage"]
        pieces = [p for p in _DELTA.findall(text) if p]
        pace = latency.per_output_token_s * usage["output_tokens"] / max(1, len(pieces))
        await send([{"index": 0, "delta": {"role": "assistant", "content": ""},
                     "finish_reason": None}])
        for n, piece in enumerate(pieces):
            if break_after is not None and n >= break_after:
                error = {"message": "The server is overloaded", "type": "server_error",
                         "code": 503}
                await response.write(f"data: {json.dumps({'error': error})}\n\n".encode())
                return
            await asyncio.sleep(self.stream_delay_s + pace)
            await send([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
        await send([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        if message["include_usage"]:
            await send([], usage=self._usage(usage))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
