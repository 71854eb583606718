"""The OpenAPI 3.1 description of /api/v1, its schemas made from the API's own models."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from bot.api.models import (
    AskRequest,
    AskResult,
    DocumentOut,
    Problem,
    SearchRequest,
    SearchResult,
    VoteRequest,
    VoteResult,
)

REF = "#/components/schemas/{model}"
_MODELS: tuple[type[BaseModel], ...] = (AskRequest, AskResult, SearchRequest, SearchResult,
                                        DocumentOut, VoteRequest, VoteResult, Problem)
_ERRORS = {"400": "The body is not JSON, or the question is empty or too long.",
           "401": "No personal access token, or one that is unknown, expired or revoked.",
           "422": "A field of the body is missing or not valid.",
           "429": "The person asked more than their quota per minute.",
           "503": "Sift is busy or cannot search right now."}


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}}


def _operation(summary: str, out: type[BaseModel], body: type[BaseModel] | None = None,
               *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    problem = {"application/problem+json": {"schema": {"$ref": REF.format(model="Problem")}}}
    responses: dict[str, Any] = {"200": {"description": "OK", "content": {
        **_json(out), **(extra or {})}}}
    responses |= {code: {"description": why, "content": problem} for code, why in _ERRORS.items()}
    operation: dict[str, Any] = {"summary": summary, "security": [{"token": []}],
                                 "responses": responses}
    if body is not None:
        operation["requestBody"] = {"required": True, "content": _json(body)}
    return operation


@cache
def _components() -> dict[str, Any]:
    _, schemas = models_json_schema([(m, "validation") for m in _MODELS],
                                    ref_template=REF)
    return dict(schemas.get("$defs", {}))


def openapi_document(base_url: str) -> dict[str, Any]:
    stream = {"text/event-stream": {"schema": {"type": "string"}, "description": (
        "With `Accept: text/event-stream`: `preview` events ({\"text\": the answer so far}), "
        "then one `answer` event (an AskResult) or one `error` event.")}}
    document = {"in": "path", "name": "id", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Sift API", "version": "1", "description": (
            "Graded, cited answers and permission-checked search over Sift's knowledge base, "
            "as the person a personal access token names (docs/mcp-and-api.md).")},
        "servers": [{"url": base_url}],
        "components": {"schemas": _components(), "securitySchemes": {"token": {
            "type": "http", "scheme": "bearer", "description": "sift tokens create --as EMAIL"}}},
        "paths": {
            "/api/v1/ask": {"post": _operation("Ask a question", AskResult, AskRequest,
                                               extra=stream)},
            "/api/v1/search": {"post": _operation("The best passages for a query",
                                                  SearchResult, SearchRequest)},
            "/api/v1/documents/{id}": {"get": {**_operation(
                "A whole document the caller may read", DocumentOut),
                "parameters": [document]}},
            "/api/v1/answers/{id}/vote": {"post": {**_operation(
                "Vote on an answer this token's person received", VoteResult, VoteRequest),
                "parameters": [document]}},
        },
    }
