"""Models behind an OpenAI-compatible Chat Completions API (vLLM, Ollama, Azure OpenAI, OpenAI)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from rag import llm_errors
from rag.errors import LLMError
from rag.llm import REPLY_TOOL, StructuredOutput
from rag.llm_retry import OutcomeSink, RetryLoop
from rag.ports import LLMRequest, LLMResponse, TextSink
from rag.types import Usage

if TYPE_CHECKING:
    import openai


def classify(exc: Exception) -> LLMError:
    """Map an openai SDK exception to an LLMError, by the rules every provider shares."""
    import openai

    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return llm_errors.timed_out(exc)
    if isinstance(exc, openai.APIConnectionError):
        return llm_errors.unreachable(exc)
    if isinstance(exc, openai.APIStatusError):
        kind, code, message = llm_errors.error_fields(exc.body)
        return llm_errors.from_failure(llm_errors.Failure(
            exc.status_code, kind, message or exc.message, code,
            llm_errors.hinted_wait(exc.response.headers)))
    if isinstance(exc, openai.APIError):  # an error event inside a stream (HTTP 200)
        kind, code, message = llm_errors.error_fields(exc.body)
        status = int(code) if code.isdigit() else 200  # vLLM and others put the status here
        return llm_errors.from_failure(llm_errors.Failure(status, kind, message, code))
    return LLMError(f"{type(exc).__name__}: {exc}", kind="unexpected", retryable=False)


def _usage(raw: Any) -> Usage:
    if raw is None:  # a server that does not count (or an older one that ignores the option)
        return Usage(calls=1)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    return Usage(input_tokens=int(raw.prompt_tokens or 0) - cached,
                 output_tokens=int(raw.completion_tokens or 0), cache_read_tokens=cached,
                 calls=1)


def _reply(completion: Any) -> LLMResponse:
    if not getattr(completion, "choices", None):
        raise llm_errors.malformed(f"the reply has no choices: {str(completion)[:80]!r}")
    choice = completion.choices[0]
    calls = choice.message.tool_calls or ()
    text = calls[0].function.arguments if calls else (choice.message.content or "")
    return LLMResponse(text=text, model=str(completion.model or ""),
                       usage=_usage(completion.usage), stop_reason=str(choice.finish_reason or ""))


def make_client(*, base_url: str, api_key: str, timeout_s: float,
                azure_api_version: str = "") -> openai.AsyncOpenAI:
    """AsyncOpenAI at `base_url`; AsyncAzureOpenAI (its deployments, its `api-key` header)
    when an Azure API version is named."""
    import openai

    http = openai.DefaultAioHttpClient(timeout=timeout_s)
    if azure_api_version:
        return openai.AsyncAzureOpenAI(azure_endpoint=base_url, api_key=api_key or None,
                                       api_version=azure_api_version, max_retries=0,
                                       timeout=timeout_s, http_client=http)
    # Local servers (vLLM without --api-key, Ollama) take any key; the SDK insists on one.
    return openai.AsyncOpenAI(base_url=base_url or None, api_key=api_key or "unused",
                              max_retries=0, timeout=timeout_s, http_client=http)


class OpenAILLM:
    """The `LLM` port over Chat Completions. A JSON schema goes as structured outputs
    (`response_format` json_schema), or, for servers that refuse it, a forced tool call or
    JSON mode with the schema in the prompt (`structured`)."""

    def __init__(self, *, base_url: str, api_key: str = "", max_retries: int = 2,
                 timeout_s: float = 30.0, structured: StructuredOutput = "json_schema",
                 azure_api_version: str = "", on_outcome: OutcomeSink | None = None) -> None:
        self._client = make_client(base_url=base_url, api_key=api_key, timeout_s=timeout_s,
                                   azure_api_version=azure_api_version)
        self._structured = structured
        self.provider = "openai"
        self.retries = RetryLoop(self.provider, max_retries=max_retries, timeout_s=timeout_s,
                                 classify=classify, on_outcome=on_outcome)

    async def close(self) -> None:
        await self._client.close()

    async def models(self) -> list[str]:
        """The ids the server serves (GET /models: OpenAI, vLLM, Ollama, llama.cpp's server)."""
        try:
            return [m.id async for m in self._client.models.list()]
        except Exception as exc:  # mapped like any call's failure
            raise classify(exc) from exc

    @property
    def http_client_class(self) -> type:
        import openai

        return openai.DefaultAioHttpClient

    def _body(self, request: LLMRequest) -> dict[str, Any]:
        system = request.system
        schema = dict(request.json_schema) if request.json_schema is not None else None
        body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
        if schema is not None and self._structured == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": REPLY_TOOL, "schema": schema, "strict": True}}
        elif schema is not None and self._structured == "tool":
            body["tools"] = [{"type": "function", "function": {
                "name": REPLY_TOOL, "description": "Give the reply.", "parameters": schema}}]
            body["tool_choice"] = {"type": "function", "function": {"name": REPLY_TOOL}}
        elif schema is not None:
            body["response_format"] = {"type": "json_object"}
            system += "\n\nReply with one JSON object that follows this JSON schema, and " \
                      f"nothing else:\n{json.dumps(schema)}"
        body["messages"] = [{"role": "system", "content": system}] + [
            {"role": role, "content": text} for role, text in request.messages]
        return body

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self._body(request)

        async def once(remaining: float) -> LLMResponse:
            return _reply(await self._client.chat.completions.create(**body, timeout=remaining))

        return await self.retries.run(request, once)

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """Server-sent chunks, each delta handed on; the last chunk carries the usage
        (`stream_options.include_usage`). Not retried once text has gone out."""
        body = self._body(request)
        emitted = False

        async def once(remaining: float) -> LLMResponse:
            nonlocal emitted
            parts: list[str] = []
            model, finish, usage = request.model, "", None
            async with asyncio.timeout(remaining):
                chunks = await self._client.chat.completions.create(
                    **body, stream=True, stream_options={"include_usage": True},
                    timeout=remaining)
                async for chunk in chunks:
                    model, usage = chunk.model or model, chunk.usage or usage
                    for choice in chunk.choices:
                        finish = choice.finish_reason or finish
                        if choice.delta.content:
                            emitted = True
                            parts.append(choice.delta.content)
                            await on_text(choice.delta.content)
            return LLMResponse("".join(parts), model, _usage(usage), finish)

        return await self.retries.run(request, once, lambda: emitted)
