"""A local fake of the Anthropic Messages API: real HTTP, scripted replies, recorded requests."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import random
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer

_WORDS = re.compile(r"[a-z0-9]{3,}")
_DOC = re.compile(r"<document(?: id=\"(?P<id>[^\"]+)\")?[^>]*>\n(?P<body>.*?)</document>", re.S)
_QUESTION = re.compile(r"Question: (?P<q>.*?)\n\n<document", re.S)
_KINDS = (("relevance grader (batch)", "grade_batch"), ("relevance grader", "grade"),
          ("answer writer", "answer"), ("question analyst", "understand"),
          ("faithfulness judge", "judge_faithfulness"), ("accuracy judge", "judge_accuracy"),
          ("connection check", "check"))
_DELTA = re.compile(r"\S*\s*")  # streamed a word at a time, as models roughly do
_SENTENCE_LINE = re.compile(r"^(\d+)\. ", re.M)
# Sift's requests for another language (rag/generate.py, rag/understand.py).
_ANSWER_IN = re.compile(r"Write the answer in (\w+), the language of the question")
_CORPUS_ASK = re.compile(r"\n\nThe knowledge base is written in (\w+); .*", re.S)
# cite_first_two's answer as the fake writes it when asked for another language.
ANSWERS_IN = {"German": ("Folgen Sie dem dokumentierten Verfahren [1].",
                         "Prüfen Sie danach das Ergebnis [2].")}
_JUDGED = re.compile(r"Question: (?P<q>.*?)\n\nReference answer:\n(?P<ref>.*?)\n\n"
                     r"Answer to score:\n(?P<answer>.*)", re.S)


@dataclass
class Reply:
    """A scripted response; `kind` limits it to one kind of call (grade, answer, understand)."""

    status: int = 200
    json_body: Any = None
    raw: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    kind: str = "any"
    break_after: int | None = None  # streaming: an overloaded error event after N text deltas
    page: str | None = None  # a body that is not JSON, as a proxy in the way might send
    failure: str = ""  # one of FAILURES, sent in the shape of the fake's own API


# The failures every provider's fake can send, each in its vendor's documented shape.
FAILURES = ("authentication", "permission", "model_not_found", "rate_limit", "overloaded",
            "context_too_long", "server")
ANTHROPIC_FAILURES = {
    "authentication": (401, "authentication_error", "invalid x-api-key"),
    "permission": (403, "permission_error",
                   "Your API key does not have permission to use the specified resource."),
    "model_not_found": (404, "not_found_error", "model: claude-nonexistent"),
    "rate_limit": (429, "rate_limit_error",
                   "Number of request tokens has exceeded your per-minute rate limit"),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "context_too_long": (400, "invalid_request_error",
                         "prompt is too long: 214321 tokens > 200000 maximum"),
    "server": (500, "api_error", "Internal server error"),
}


def failing(name: str, kind: str = "any", retry_after_s: float | None = None) -> Reply:
    """A scripted failure, rendered by whichever fake takes it in its own API's shape."""
    headers = {} if retry_after_s is None else {"retry-after": f"{retry_after_s:g}"}
    return Reply(failure=name, headers=headers, kind=kind)


@dataclass
class ModelLatency:
    """How long a real model takes: time to first token, then a steady pace per output token.

    Zero by default (tests stay fast). `bench.grading` sets figures typical of a small Claude
    model, so that output length drives latency as it does for the real API.
    """

    first_token_s: float = 0.0
    per_output_token_s: float = 0.0
    # A real model's times vary from call to call: each reply's are scaled by a factor drawn
    # evenly from [1 - jitter, 1 + jitter] (seeded, so that a run can be repeated).
    jitter: float = 0.0
    _draws: random.Random = field(default_factory=lambda: random.Random(0), repr=False,
                                  compare=False)

    def seconds(self, output_tokens: int) -> float:
        return self.first_token_s + self.per_output_token_s * output_tokens

    def draw(self) -> ModelLatency:
        """One reply's times (these, when there is no jitter)."""
        if not self.jitter:
            return self
        factor = self._draws.uniform(1 - self.jitter, 1 + self.jitter)
        return ModelLatency(self.first_token_s * factor, self.per_output_token_s * factor)


def error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message},
            "request_id": "req_fake"}


def overloaded(kind: str = "any") -> Reply:
    return Reply(529, error("overloaded_error", "Overloaded"), kind=kind)


def rate_limited(retry_after_s: float, kind: str = "any") -> Reply:
    return Reply(429, error("rate_limit_error", "Number of requests has exceeded your "
                            "per-minute rate limit"),
                 headers={"retry-after": f"{retry_after_s:g}"}, kind=kind)


def text_reply(text: str, kind: str = "any", delay_s: float = 0.0) -> Reply:
    return Reply(200, None, text, delay_s=delay_s, kind=kind)


@dataclass
class Recorded:
    kind: str
    body: dict[str, Any]
    headers: dict[str, str]
    started: float
    finished: float = 0.0


def _text_of(content: str | list[dict[str, Any]]) -> str:
    """A message's text, whether a string or content blocks (text beside images)."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def _as_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}


def overlap_grade(question: str, document: str) -> tuple[float, str]:
    asked = set(_WORDS.findall(question.lower()))
    found = asked & set(_WORDS.findall(document.lower()))
    score = round(len(found) / len(asked), 2) if asked else 0.0
    return score, f"Shares {len(found)} of {len(asked)} question terms."


def all_supported(sentences: list[str]) -> list[str]:
    return ["supported"] * len(sentences)


def always_correct(question: str, reference: str, answer: str) -> int:
    return 2


def cite_first_two(question: str, excerpts: int) -> str:
    if excerpts >= 2:
        return "Follow the documented procedure [1]. Confirm the result afterwards [2]."
    return "Follow the documented procedure [1]."


class FakeAnthropic(LocalServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Recorded] = []
        self.script: deque[Reply] = deque()
        self.latency_s: dict[str, float] = {}
        self.grade_rule: Callable[[str, str], tuple[float, str]] = overlap_grade
        self.answer_rule: Callable[[str, int], str] = cite_first_two
        # When set, answers are written from the whole prompt (e.g. to echo what it holds).
        self.answer_from_prompt: Callable[[str], str] | None = None
        self.understanding: dict[str, Any] | None = None
        self.images: list[tuple[str, str, bytes]] = []  # (kind of call, media type, bytes)
        # Asked for search phrases in the documents' language: the message's, from here.
        self.phrases_in_corpus: dict[str, list[str]] = {}
        # The evaluation judge: a verdict per answer sentence, and a 0/1/2 accuracy score.
        self.faithfulness_rule: Callable[[list[str]], list[str]] = all_supported
        self.accuracy_rule: Callable[[str, str, str], int] = always_correct
        self.stream_delay_s = 0.0  # between streamed text deltas
        # A grade's extra wait before its reply begins, by the graded document's text (a
        # slow call for one candidate, as a loaded API gives now and then).
        self.grade_delay_rule: Callable[[str], float] | None = None
        self.model_latency = ModelLatency()  # added to latency_s, by the reply's length
        self.in_flight = 0
        self.max_in_flight = 0
        self._ids = itertools.count(1)
        self._cached_prefixes: set[str] = set()
        self.app.router.add_post("/v1/messages", self._messages)

    def calls(self, kind: str) -> list[Recorded]:
        return [r for r in self.requests if r.kind == kind]

    def _take(self, kind: str) -> Reply | None:
        for reply in list(self.script):
            if reply.kind in ("any", kind):
                self.script.remove(reply)
                return reply
        return None

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        return await self.answer(request, body, stream=bool(body.get("stream")))

    async def answer(self, request: web.Request, body: dict[str, Any], *,
                     stream: bool) -> web.StreamResponse:
        """One Messages call, whichever route (and platform) carried it in."""
        system = "".join(b.get("text", "") for b in body.get("system", []))
        kind = next((k for marker, k in _KINDS if marker in system.splitlines()[0]), "other")
        record = Recorded(kind, body, dict(request.headers), time.monotonic())
        self.requests.append(record)
        refused = self._images_of(kind, body)
        if refused:  # as the Messages API refuses a malformed image block
            return web.json_response(error("invalid_request_error", refused), status=400,
                                     headers={"request-id": "req_fake"})
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            scripted = self._take(kind)
            await asyncio.sleep(scripted.delay_s if scripted else self.latency_s.get(kind, 0.0))
            if kind == "grade" and self.grade_delay_rule is not None:
                graded = _DOC.search(_text_of(body["messages"][-1]["content"]))
                await asyncio.sleep(self.grade_delay_rule(graded.group("body") if graded else ""))
            if scripted is not None and scripted.page is not None:
                return web.Response(text=scripted.page, status=scripted.status,
                                    content_type="text/html")
            if scripted is not None and scripted.failure:
                return self.failure_response(scripted.failure, scripted.headers)
            if scripted is not None and (scripted.status != 200 or scripted.json_body):
                return web.json_response(scripted.json_body, status=scripted.status,
                                         headers={"request-id": "req_fake", **scripted.headers})
            text = scripted.raw if scripted is not None and scripted.raw is not None \
                else self._default(kind, body)
            message = self._message(body, system, text)
            latency = self.model_latency.draw()
            if stream:  # the per-token time is spent between the deltas
                await asyncio.sleep(latency.first_token_s)
                return await self._sse(request, message, latency,
                                       scripted.break_after if scripted else None)
            await asyncio.sleep(latency.seconds(message["usage"]["output_tokens"]))
            return self.message_response(message)
        finally:
            self.in_flight -= 1
            record.finished = time.monotonic()

    def message_response(self, message: dict[str, Any]) -> web.Response:
        return web.json_response(message, headers={"request-id": "req_fake"})

    def failure_response(self, name: str, headers: dict[str, str]) -> web.Response:
        """A named failure (FAILURES) as this API documents it."""
        status, kind, message = ANTHROPIC_FAILURES[name]
        return web.json_response(error(kind, message), status=status,
                                 headers={"request-id": "req_fake", **headers})

    async def _sse(self, request: web.Request, message: dict[str, Any], latency: ModelLatency,
                   break_after: int | None) -> web.StreamResponse:
        """The message as server-sent events, shaped like the Messages API's streaming docs:
        message_start, content_block_start/delta.../stop, message_delta, message_stop."""
        response = web.StreamResponse(headers={"Content-Type": self.stream_content_type,
                                               "request-id": "req_fake"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionResetError):  # the client gave up (a deadline)
            await self._events(response, message, latency, break_after)
        return response

    async def _events(self, response: web.StreamResponse, message: dict[str, Any],
                      latency: ModelLatency, break_after: int | None) -> None:

        async def send(event: str, data: dict[str, Any]) -> None:
            await response.write(self.encode_event(event, data))

        text, usage = message["content"][0]["text"], message["usage"]
        pieces = [p for p in _DELTA.findall(text) if p]
        pace = latency.per_output_token_s * usage["output_tokens"] / max(1, len(pieces))
        start = {**message, "content": [], "stop_reason": None,
                 "usage": {**usage, "output_tokens": 1}}
        await send("message_start", {"type": "message_start", "message": start})
        await send("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
        for n, piece in enumerate(pieces):
            if break_after is not None and n >= break_after:
                await send("error", error("overloaded_error", "Overloaded"))
                return
            await asyncio.sleep(self.stream_delay_s + pace)
            await send("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": piece}})
        await send("content_block_stop", {"type": "content_block_stop", "index": 0})
        await send("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]}})
        await send("message_stop", {"type": "message_stop"})
        await response.write_eof()

    stream_content_type = "text/event-stream"

    def encode_event(self, event: str, data: dict[str, Any]) -> bytes:
        """One streamed event on the wire: here a server-sent event, as the Messages API sends."""
        return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()

    def _images_of(self, kind: str, body: dict[str, Any]) -> str:
        """Image blocks are checked as the API documents them (base64 source, one of four
        media types, at most 5 MB) and kept in `images`; the refusal's message, or ""."""
        for message in body.get("messages", []):
            blocks = message["content"] if isinstance(message["content"], list) else []
            for block in blocks:
                if block.get("type") != "image":
                    continue
                source = block.get("source") or {}
                if source.get("type") != "base64" or source.get("media_type") not in (
                        "image/jpeg", "image/png", "image/gif", "image/webp"):
                    return "messages: image source type or media type is not supported"
                data = base64.b64decode(source.get("data", ""), validate=True)
                if len(data) > 5 * 1024 * 1024:
                    return "messages: image exceeds 5 MB maximum"
                self.images.append((kind, source["media_type"], data))
        return ""

    def _default(self, kind: str, body: dict[str, Any]) -> str:
        content = _text_of(body["messages"][-1]["content"])
        if kind in ("grade", "grade_batch"):
            question = _QUESTION.search(content)
            q = question.group("q") if question else ""
            docs = list(_DOC.finditer(content))
            if kind == "grade":
                score, reason = self.grade_rule(q, docs[0].group("body"))
                return json.dumps({"score": score, "reason": reason})
            grades = [dict(zip(("score", "reason"), self.grade_rule(q, d.group("body")),
                               strict=True), id=d.group("id")) for d in docs]
            return json.dumps({"grades": grades})
        if kind == "answer" and self.answer_from_prompt is not None:
            return self.answer_from_prompt(content)
        if kind == "answer":
            question = content.rsplit("Question: ", 1)[-1]
            asked_in = _ANSWER_IN.search(content)
            if asked_in and asked_in.group(1) in ANSWERS_IN and self.answer_rule is cite_first_two:
                return " ".join(ANSWERS_IN[asked_in.group(1)][:content.count("<excerpt n=")])
            return self.answer_rule(question, content.count("<excerpt n="))
        if kind == "understand":
            message = content.rsplit("Message: ", 1)[-1]
            corpus_asked = _CORPUS_ASK.search(message)
            message = _CORPUS_ASK.sub("", message)
            phrases = self.phrases_in_corpus.get(message, [message]) if corpus_asked \
                else [message]
            return json.dumps(self.understanding or {
                "intent": "knowledge", "standalone_question": message,
                "search_phrases": phrases, "reply": ""})
        if kind.startswith("judge_"):
            return self._judge(kind, content)
        if kind == "check":  # `sift llm check`: a model that follows the instruction
            return json.dumps({"ok": True})
        return "ok"

    def _judge(self, kind: str, content: str) -> str:
        if kind == "judge_faithfulness":
            listed = content.split("Answer sentences:\n", 1)[-1]
            said = [line.split(". ", 1)[1] for line in listed.splitlines()
                    if _SENTENCE_LINE.match(line)]
            verdicts = self.faithfulness_rule(said)
            return json.dumps({"verdicts": [{"n": n, "verdict": v}
                                            for n, v in enumerate(verdicts, start=1)]})
        parts = _JUDGED.search(content)
        q, ref, answer = (parts.group("q"), parts.group("ref"), parts.group("answer")) \
            if parts else ("", "", content)
        return json.dumps({"score": self.accuracy_rule(q, ref, answer), "reason": "Scripted."})

    def _message(self, body: dict[str, Any], system: str, text: str) -> dict[str, Any]:
        cacheable = any("cache_control" in b for b in body.get("system", []))
        prefix_tokens = len(system) // 4
        cache_read = cache_write = 0
        if cacheable:
            cache_read, cache_write = ((prefix_tokens, 0) if system in self._cached_prefixes
                                       else (0, prefix_tokens))
            self._cached_prefixes.add(system)
        total_in = len(json.dumps(body)) // 4
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        forced = (body.get("tool_choice") or {}).get("name")
        if forced:  # a forced tool call: the reply is the tool's input
            content = [{"type": "tool_use", "id": f"toolu_fake{len(self.requests):05d}",
                        "name": forced, "input": _as_object(text)}]
        return {
            "id": f"msg_fake{next(self._ids):05d}", "type": "message", "role": "assistant",
            "model": body["model"], "content": content,
            "stop_reason": "tool_use" if forced else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": max(1, total_in - cache_read - cache_write),
                      "output_tokens": max(1, len(text) // 4),
                      "cache_creation_input_tokens": cache_write,
                      "cache_read_input_tokens": cache_read, "service_tier": "standard"},
        }
