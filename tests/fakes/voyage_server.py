"""A local fake of Voyage AI's embeddings API: real HTTP, deterministic vectors, scripted faults."""

from __future__ import annotations

import base64
import hashlib
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer

# Voyage's model table: these default to 1024 and take output_dimension 256/512/1024/2048;
# every other model has one fixed size and refuses the parameter.
FLEXIBLE = frozenset({"voyage-3.5", "voyage-3.5-lite", "voyage-3-large", "voyage-code-3",
                      "voyage-4", "voyage-4-lite", "voyage-4-large"})
FLEXIBLE_SIZES = (256, 512, 1024, 2048)
FIXED = {"voyage-3": 1024, "voyage-3-lite": 512, "voyage-finance-2": 1024, "voyage-law-2": 1024,
         "voyage-multilingual-2": 1024, "voyage-code-2": 1536, "voyage-large-2": 1536,
         "voyage-2": 1024}
INPUT_TYPES = (None, "query", "document")


@dataclass
class Fault:
    """A scripted error reply, served (once) instead of the next embeddings response."""

    status: int
    detail: str
    headers: dict[str, str] = field(default_factory=dict)


def server_error() -> Fault:
    return Fault(500, "Internal server error.")


def rate_limited(retry_after_s: float) -> Fault:
    return Fault(429, "You have exceeded your rate limit. Please retry after a short wait.",
                 {"retry-after": f"{retry_after_s:g}"})


def unauthorized(detail: str = "Provided API key is invalid.") -> Fault:
    return Fault(401, detail)


@dataclass
class Recorded:
    body: dict[str, Any]
    headers: dict[str, str]


def fake_vector(text: str, dimension: int) -> list[float]:
    """The same text always gets the same vector; k/128 values survive float32 exactly."""
    digest = hashlib.shake_256(text.encode()).digest(dimension)
    return [(b - 128) / 128 for b in digest]


class FakeVoyage(LocalServer):
    """POST /v1/embeddings as Voyage documents it; point the SDK at `base_url`."""

    def __init__(self, api_key: str = "") -> None:
        super().__init__()
        self.api_key = api_key  # when set, any other bearer token gets a 401
        self.requests: list[Recorded] = []
        self.faults: deque[Fault] = deque()
        self.fixed = dict(FIXED)  # a test may add a model Sift does not know
        self.app.router.add_post("/v1/embeddings", self._embeddings)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(Recorded(body, dict(request.headers)))
        if self.api_key and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._error(unauthorized())
        if self.faults:
            return self._error(self.faults.popleft())
        refusal = self._refusal(body)
        if refusal:
            return self._error(Fault(400, refusal))
        return web.json_response(self._response(body))

    def _refusal(self, body: dict[str, Any]) -> str:
        model, wanted = body.get("model"), body.get("output_dimension")
        if body.get("input_type") not in INPUT_TYPES:
            return f"input_type must be one of query, document or null, not {body['input_type']}"
        if model not in FLEXIBLE and model not in self.fixed:
            return f"Model {model} is not supported."
        if wanted is not None and model not in FLEXIBLE:
            return f"output_dimension is not supported for {model}."
        if wanted is not None and wanted not in FLEXIBLE_SIZES:
            return f"output_dimension must be one of {FLEXIBLE_SIZES} for {model}."
        return ""

    def _response(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        size = body.get("output_dimension") or self.fixed.get(body["model"], 1024)
        as_base64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": _encoded(fake_vector(t, size)) if as_base64 else fake_vector(t, size)}
                for i, t in enumerate(texts)]
        tokens = sum(len(t.split()) for t in texts)
        return {"object": "list", "data": data, "model": body["model"],
                "usage": {"total_tokens": tokens}}

    @staticmethod
    def _error(fault: Fault) -> web.Response:
        return web.json_response({"detail": fault.detail}, status=fault.status,
                                 headers=fault.headers)


def _encoded(vector: list[float]) -> str:
    """encoding_format=base64: the little-endian float32 array, base64-encoded."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
