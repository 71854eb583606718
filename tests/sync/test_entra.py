"""Microsoft Entra app tokens through msal against a fake Entra over HTTPS: the cache, secret
and certificate credentials, and one sentence naming the setting at fault."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import hashes
from pydantic import SecretStr

from sync.connectors.common.entra import EntraApp, EntraError, EntraNames, EntraToken
from sync.connectors.common.microsoft import GRAPH_SCOPE
from tests.fakes.entra_server import CLIENT_ID, SECRET, TENANT, TOKEN, FakeEntra, thumbprint
from tests.fakes.tls import AppCertificate

NAMES = EntraNames(tenant="TENANT-SETTING", client_id="CLIENT-SETTING",
                   secret="SECRET-SETTING", certificate="CERTIFICATE-SETTING",
                   authority="AUTHORITY-SETTING")


@pytest.fixture
async def entra() -> AsyncIterator[FakeEntra]:
    async with FakeEntra() as server:
        assert isinstance(server, FakeEntra)
        yield server


def token(server: FakeEntra, **app: Any) -> EntraToken:
    fields: dict[str, Any] = {"tenant": TENANT, "client_id": CLIENT_ID,
                              "secret": SecretStr(SECRET), "authority": server.url, **app}
    return EntraToken(EntraApp(**fields), NAMES)


async def refusal(source: EntraToken) -> EntraError:
    with pytest.raises(EntraError) as caught:
        await source.get()
    return caught.value


async def test_a_token_is_reused_from_the_cache_until_near_expiry(entra: FakeEntra) -> None:
    issued = iter(f"token-{i}" for i in range(10))
    entra.issue = lambda: next(issued)
    source = token(entra)
    assert [await source.get(), await source.get()] == ["token-0", "token-0"]
    assert len(entra.token_requests) == 1 and entra.discoveries == 1
    form = entra.token_requests[0]
    assert (form["grant_type"], form["scope"]) == ("client_credentials", GRAPH_SCOPE)
    entra.expires_in = 240  # inside msal's five-minute margin: renewed at once
    short = token(entra)
    assert [await short.get(), await short.get()] == ["token-1", "token-2"]


async def test_a_token_the_resource_refused_is_not_served_again(entra: FakeEntra) -> None:
    issued = iter(["first", "second"])
    entra.issue = lambda: next(issued)
    source = token(entra)
    assert await source.get() == "first"
    assert await source.get(refused="an-older-one") == "first"  # another's refusal: cached
    assert await source.get(refused="first") == "second"
    assert len(entra.token_requests) == 2


@pytest.mark.parametrize("kind", ["pem", "pem-encrypted", "pem-key-and-thumbprint", "pfx"])
async def test_a_certificate_signs_a_client_assertion_the_service_verifies(
        entra: FakeEntra, tmp_path: Path, kind: str) -> None:
    cert = AppCertificate.new()
    entra.certificate, entra.secret = cert.cert, None  # the app has no secret at all
    password = b"pfx-pass-5" if kind in ("pfx", "pem-encrypted") else None
    path = cert.pfx_file(tmp_path, b"pfx-pass-5") if kind == "pfx" else cert.pem_file(
        tmp_path, password)
    app: dict[str, Any] = {"secret": None, "certificate": path,
                           "password": SecretStr(password.decode()) if password else None}
    if kind == "pem-key-and-thumbprint":  # the key alone, the portal's SHA-1 thumbprint
        path.write_bytes(path.read_bytes().split(b"-----BEGIN CERTIFICATE-----")[0])
        app["thumbprint"] = cert.cert.fingerprint(hashes.SHA1()).hex().upper()
    assert await token(entra, **app).get() == TOKEN
    form = entra.token_requests[-1]
    assert "client_secret" not in form
    assert form["client_assertion_type"] == \
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    header, claims = entra.assertions[-1]  # verified by the fake with the public key
    if kind == "pem-key-and-thumbprint":
        assert (header["alg"], header["x5t"].rstrip("=")) == (
            "RS256", thumbprint(cert.cert, hashes.SHA1()))
    else:
        assert (header["alg"], header["x5t#S256"].rstrip("=")) == (
            "PS256", thumbprint(cert.cert, hashes.SHA256()))
    assert claims["aud"] == entra.token_endpoint() and claims["iss"] == claims["sub"] == CLIENT_ID
    jwt.decode(form["client_assertion"], cert.cert.public_key(), algorithms=[header["alg"]],
               audience=entra.token_endpoint())  # the signature is the certificate's key's


async def test_a_certificate_the_app_does_not_hold_names_the_certificate_setting(
        entra: FakeEntra, tmp_path: Path) -> None:
    entra.certificate = AppCertificate.new().cert
    stranger = AppCertificate.new().pem_file(tmp_path)
    error = await refusal(token(entra, secret=None, certificate=stranger))
    assert "AADSTS700027" in error.sentence and "CERTIFICATE-SETTING" in error.sentence
    assert "SECRET-SETTING" not in error.sentence


@pytest.mark.parametrize(("app", "named", "code"), [
    ({"secret": SecretStr("wrong-secret-9")}, "SECRET-SETTING", "invalid_client AADSTS7000215"),
    ({"client_id": "no-such-app"}, "CLIENT-SETTING", "unauthorized_client AADSTS700016"),
    ({"tenant": "no-such-tenant"}, "TENANT-SETTING", "AADSTS90002"),  # at discovery
])
async def test_wrong_credentials_are_one_sentence_naming_the_setting(
        entra: FakeEntra, app: dict[str, Any], named: str, code: str) -> None:
    error = await refusal(token(entra, **app))
    assert code in error.sentence and named in error.sentence
    others = {"SECRET-SETTING", "CLIENT-SETTING", "TENANT-SETTING"} - {named}
    assert not any(other in error.sentence for other in others)
    assert "wrong-secret-9" not in error.sentence + str(error)


async def test_an_unreachable_service_is_one_sentence(entra: FakeEntra) -> None:
    error = await refusal(token(entra, authority="https://127.0.0.1:9"))
    assert error.sentence.startswith("Microsoft Entra at https://127.0.0.1:9 could not be "
                                     "reached")


async def test_a_missing_certificate_file_names_the_setting(entra: FakeEntra,
                                                            tmp_path: Path) -> None:
    error = await refusal(token(entra, secret=None, certificate=tmp_path / "gone.pem"))
    assert "CERTIFICATE-SETTING" in error.sentence and entra.token_requests == []


async def test_no_token_or_secret_reaches_the_log(entra: FakeEntra,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert await token(entra).get() == TOKEN
    await refusal(token(entra, secret=SecretStr("wrong-secret-9")))
    assert "oauth2/v2.0/token" in caplog.text  # the requests were logged: not vacuous
    for secret in (TOKEN, SECRET, "wrong-secret-9"):
        assert secret not in caplog.text
