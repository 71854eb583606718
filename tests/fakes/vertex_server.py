"""A local fake of Claude on Google Vertex AI (rawPredict, streamRawPredict) and of Google's
OAuth 2.0 token endpoint, so google-auth's own credential chain mints the bearer token."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.anthropic_server import ANTHROPIC_FAILURES, FakeAnthropic, error

PROJECT = "sift-fake-project"
REGION = "us-east5"
VERSION = "vertex-2023-10-16"  # the anthropic_version Vertex's Claude models take
CLIENT_EMAIL = f"sift-answers@{PROJECT}.iam.gserviceaccount.com"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# The audience Google's token endpoint requires of a service account's assertion.
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
# Google's error body for what Vertex answers itself; a model's own refusal (a prompt too
# long) comes back in the Messages API's shape.
VERTEX_FAILURES = {
    "authentication": (401, "UNAUTHENTICATED", "Request had invalid authentication "
                       "credentials. Expected OAuth 2 access token, login cookie or other "
                       "valid authentication credential."),
    "permission": (403, "PERMISSION_DENIED", "Permission 'aiplatform.endpoints.predict' "
                   f"denied on resource '//aiplatform.googleapis.com/projects/{PROJECT}'."),
    "model_not_found": (404, "NOT_FOUND", f"Publisher Model `projects/{PROJECT}/locations/"
                        f"{REGION}/publishers/anthropic/models/claude-nonexistent` not found."),
    "rate_limit": (429, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform.googleapis.com/"
                   "online_prediction_requests_per_base_model with base model: anthropic-claude."),
    "overloaded": (503, "UNAVAILABLE", "The service is currently unavailable."),
    "server": (500, "INTERNAL", "Internal error encountered."),
}


class FakeVertex(FakeAnthropic):
    """The Messages body at the publisher model's rawPredict (model in the path,
    anthropic_version in the body), answered only with a token its OAuth endpoint issued."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: set[str] = set()
        self.token_requests: list[dict[str, str]] = []
        self._serial = itertools.count(1)
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.app.router.add_post("/token", self._token)
        self.app.router.add_post("/v1/projects/{project}/locations/{region}/publishers/"
                                 "anthropic/models/{call}", self._predict)

    def credentials_file(self, directory: Path) -> Path:
        """A service account key file (what the console's "Create key" downloads) whose
        token_uri is this fake: google-auth signs a JWT with its key and trades it here."""
        pem = self._key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()).decode()
        path = directory / "service-account.json"
        path.write_text(json.dumps({
            "type": "service_account", "project_id": PROJECT, "private_key_id": "fake-key-1",
            "private_key": pem, "client_email": CLIENT_EMAIL, "client_id": "1000000000001",
            "token_uri": f"{self.url}/token"}))
        return path

    async def _token(self, request: web.Request) -> web.Response:
        """OAuth 2.0's JWT bearer grant (RFC 7523), as Google's token endpoint takes it."""
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.token_requests.append(form)
        try:
            if form.get("grant_type") != JWT_BEARER:
                raise jwt.InvalidTokenError(f"grant_type {form.get('grant_type')}")
            claims = jwt.decode(form.get("assertion", ""), self._key.public_key(),
                                algorithms=["RS256"], audience=GOOGLE_TOKEN_AUDIENCE)
            if claims.get("iss") != CLIENT_EMAIL or SCOPE not in claims.get("scope", ""):
                raise jwt.InvalidTokenError("issuer or scope")
        except jwt.InvalidTokenError as exc:
            return web.json_response({"error": "invalid_grant",
                                      "error_description": f"Invalid JWT: {exc}"}, status=400)
        token = f"ya29.fake-access-token-{next(self._serial)}"
        self.tokens.add(token)
        return web.json_response({"access_token": token, "expires_in": 3599,
                                  "token_type": "Bearer"})

    async def _predict(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["call"].partition(":")
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if bearer not in self.tokens:
            return self._google_error(*VERTEX_FAILURES["authentication"], {})
        if (request.match_info["project"], request.match_info["region"]) != (PROJECT, REGION):
            return self._google_error(*VERTEX_FAILURES["permission"], {})
        if method not in ("rawPredict", "streamRawPredict"):
            return self._google_error(404, "NOT_FOUND", f"Method {method} not found.", {})
        body = await request.json()
        if body.get("anthropic_version") != VERSION or "model" in body:
            return self._google_error(400, "INVALID_ARGUMENT", "anthropic_version must be "
                                      f"{VERSION}, and the model is named in the path", {})
        body["model"] = model
        return await self.answer(request, body, stream=method == "streamRawPredict")

    @staticmethod
    def _google_error(status: int, code: str, message: str,
                      headers: dict[str, str]) -> web.Response:
        return web.json_response({"error": {"code": status, "message": message,
                                            "status": code}}, status=status, headers=headers)

    def failure_response(self, name: str, headers: dict[str, str]) -> web.Response:
        if name in VERTEX_FAILURES:  # Google's errors carry no Retry-After
            return self._google_error(*VERTEX_FAILURES[name], {})
        status, kind, message = ANTHROPIC_FAILURES[name]  # the model's own answer, relayed
        return web.json_response(error(kind, message), status=status, headers=headers)

    def message_response(self, message: dict[str, Any]) -> web.Response:
        return web.json_response(message)
