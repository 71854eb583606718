"""A local fake of Amazon Bedrock's runtime for Claude: InvokeModel and
InvokeModelWithResponseStream, every request's SigV4 signature checked, streams framed as
AWS event streams (application/vnd.amazon.eventstream)."""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from tests.fakes.anthropic_server import FakeAnthropic

ACCESS_KEY = "AKIAFAKEBEDROCK00001"
SECRET_KEY = "fake/secret/key/for/the/local/bedrock/fake"
REGION = "us-east-1"
SERVICE = "bedrock"
VERSION = "bedrock-2023-05-31"  # the anthropic_version Bedrock's Claude models take
_AUTH = re.compile(r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/"
                   r"(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request, "
                   r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})$")
_SKEW_S = 15 * 60  # AWS refuses a request signed more than 15 minutes away from its clock
_ERROR_TYPE = "{}:http://internal.amazon.com/coral/com.amazon.bedrock/"
# As the Bedrock runtime API reference lists them (status, x-amzn-ErrorType, message).
BEDROCK_FAILURES = {
    "authentication": (403, "UnrecognizedClientException",
                       "The security token included in the request is invalid."),
    "permission": (403, "AccessDeniedException",
                   "You don't have access to the model with the specified model ID."),
    "model_not_found": (400, "ValidationException", "The provided model identifier is invalid."),
    "rate_limit": (429, "ThrottlingException",
                   "Too many requests, please wait before trying again."),
    "overloaded": (503, "ServiceUnavailableException",
                   "Bedrock is unable to process your request."),
    "context_too_long": (400, "ValidationException", "Input is too long for requested model."),
    "server": (500, "InternalServerException", "The server encountered an internal error."),
}


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude (total and headers length, its CRC32), string
    headers (name length, name, type 7, value length, value), payload, message CRC32."""
    encoded = b"".join(bytes([len(k)]) + k.encode() + b"\x07" +
                       struct.pack(">H", len(v.encode())) + v.encode()
                       for k, v in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return head + struct.pack(">I", binascii.crc32(head))


class FakeBedrock(FakeAnthropic):
    """Claude on Bedrock: the Messages body (model in the path, anthropic_version in the body)
    behind AWS's signing and error conventions."""

    stream_content_type = "application/vnd.amazon.eventstream"

    def __init__(self) -> None:
        super().__init__()
        self.signature_failures: list[str] = []  # why each refused request was refused
        self.app.router.add_post("/model/{model}/invoke", self._invoke)
        self.app.router.add_post("/model/{model}/invoke-with-response-stream", self._invoke)

    async def _invoke(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        problem = self._signature_problem(request, raw)
        if problem:
            self.signature_failures.append(problem)
            code = "UnrecognizedClientException" if "access key" in problem \
                else "InvalidSignatureException"
            return self._error(403, code, problem, {})
        body = json.loads(raw)
        if body.get("anthropic_version") != VERSION or "model" in body:
            return self._error(400, "ValidationException",
                               f"Malformed input request: anthropic_version must be {VERSION}, "
                               "and the model is named in the path", {})
        body["model"] = request.match_info["model"]
        stream = request.path.endswith("/invoke-with-response-stream")
        return await self.answer(request, body, stream=stream)

    def _signature_problem(self, request: web.Request, raw: bytes) -> str:
        """Recompute the SigV4 signature from what arrived; '' when it matches."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        found = _AUTH.match(request.headers.get("Authorization", ""))
        stamp = request.headers.get("X-Amz-Date", "")
        if found is None or not stamp:
            return "Authorization is not a SigV4 header, or X-Amz-Date is missing"
        if found["key"] != ACCESS_KEY:
            return f"The access key {found['key']} is unknown (UnrecognizedClient)"
        if (found["region"], found["service"], found["date"]) != (REGION, SERVICE, stamp[:8]):
            return "The credential scope is not this region, service and date"
        when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        if abs((datetime.now(UTC) - when).total_seconds()) > _SKEW_S:
            return "Signature expired: the request was signed more than 15 minutes ago"
        signed = found["signed"].split(";")
        if "host" not in signed or "x-amz-date" not in signed:
            return "SignedHeaders must include host and x-amz-date"
        headers = {name: request.headers.get(name, "") for name in signed}
        again = AWSRequest(method=request.method, url=f"http://{request.host}{request.raw_path}",
                           headers=headers, data=raw)
        again.context["timestamp"] = stamp
        signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), SERVICE, REGION)
        expected = signer.signature(signer.string_to_sign(again,
                                                          signer.canonical_request(again)), again)
        if expected != found["signature"]:
            return ("The request signature we calculated does not match the signature you "
                    "provided.")
        return ""

    def _error(self, status: int, code: str, message: str,
               headers: dict[str, str]) -> web.Response:
        return web.json_response({"message": message}, status=status, headers={
            "x-amzn-ErrorType": _ERROR_TYPE.format(code), "x-amzn-RequestId": "fake-req-1",
            **headers})

    def failure_response(self, name: str, headers: dict[str, str]) -> web.Response:
        status, code, message = BEDROCK_FAILURES[name]
        return self._error(status, code, message, {})  # Bedrock sends no Retry-After

    def message_response(self, message: dict[str, Any]) -> web.Response:
        usage = message["usage"]
        return web.json_response(message, headers={
            "x-amzn-RequestId": "fake-req-1",
            "X-Amzn-Bedrock-Input-Token-Count": str(usage["input_tokens"]),
            "X-Amzn-Bedrock-Output-Token-Count": str(usage["output_tokens"])})

    def encode_event(self, event: str, data: dict[str, Any]) -> bytes:
        """A chunk event whose bytes are the Messages API's event, base64 in JSON; an error
        as the exception frame Bedrock sends mid-stream."""
        if event == "error":
            return frame({":exception-type": "serviceUnavailableException",
                          ":content-type": "application/json", ":message-type": "exception"},
                         json.dumps({"message": data["error"]["message"]}).encode())
        part = {"bytes": base64.b64encode(json.dumps(data).encode()).decode()}
        return frame({":event-type": "chunk", ":content-type": "application/json",
                      ":message-type": "event"}, json.dumps(part).encode())
