"""The Tokens page: admins make a token as an email (its secret shown once, then only its
hint), see each token's state and revoke one; CSRF-checked, audited; viewers cannot."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

from storage.audit import AuditLog
from storage.tokens import TokenRepository
from tests.admin.conftest import VIEWER_PW, Console


def _form(csrf: str, **values: str) -> dict[str, str]:
    return {"csrf": csrf, "email": "ada@example.com", "label": "Claude Desktop",
            "expires": "30d", **values}


def _audited(console: Console, action: str) -> list[str]:
    since = datetime.now(UTC) - timedelta(minutes=5)
    return [e.target for e in AuditLog(console.db).since(since) if e.action == action]


async def test_an_admin_makes_sees_and_revokes_a_token(console: Console) -> None:
    await console.sign_in()
    csrf = await console.csrf("/admin/tokens")
    made = await console.client.post("/admin/tokens", data=_form(csrf))
    page = await made.text()
    assert made.status == 200 and made.headers["Cache-Control"] == "no-store"
    found = re.search(r'<code id="token-secret">(sift_pat_[\w-]+)</code>', page)
    assert found is not None and "shown only this once" in page
    secret = found.group(1)
    repository = TokenRepository(console.db)
    token = await asyncio.to_thread(repository.verify, secret)  # the secret opens the API
    assert token is not None and (token.email, token.label) == ("ada@example.com",
                                                                "Claude Desktop")
    assert token.created_by == "admin" and token.expires_at is not None
    listed = await (await console.client.get("/admin/tokens")).text()
    assert secret not in listed and token.hint in listed  # never again the secret
    assert re.search(rf'id="token-{token.id}".*?class="state">active<', listed, re.S)
    revoked = await console.client.post(f"/admin/tokens/{token.id}/revoke",
                                        data={"csrf": csrf}, allow_redirects=False)
    assert revoked.status == 303
    assert await asyncio.to_thread(repository.verify, secret) is None
    after = await (await console.client.get(revoked.headers["Location"])).text()
    assert "is revoked" in after
    assert re.search(rf'id="token-{token.id}".*?class="state">revoked<', after, re.S)
    assert f'id="revoke-{token.id}"' not in after
    assert f"token {token.id}" in _audited(console, "token_created")
    assert f"token {token.id}" in _audited(console, "token_revoked")
    assert all(secret not in str(e.after) for e in AuditLog(console.db).since(
        datetime.now(UTC) - timedelta(minutes=5)))


async def test_a_wrong_field_comes_back_marked_and_nothing_is_made(console: Console) -> None:
    await console.sign_in()
    csrf = await console.csrf("/admin/tokens")
    before = len(await asyncio.to_thread(TokenRepository(console.db).list))
    bad = await console.client.post("/admin/tokens", data=_form(csrf, email="ada",
                                                                expires="soon"))
    page = await bad.text()
    assert bad.status == 400 and 'id="error-email"' in page and 'id="error-expires"' in page
    assert 'value="soon"' in page and "sift_pat_" not in page.split('id="tokens"')[0]
    assert len(await asyncio.to_thread(TokenRepository(console.db).list)) == before


async def test_viewers_and_forged_forms_are_refused(console: Console) -> None:
    await console.sign_in()
    forged = await console.client.post("/admin/tokens", data=_form("forged"))
    assert forged.status == 403
    await console.client.post("/admin/logout", data={"csrf": await console.csrf()})
    await console.sign_in(VIEWER_PW)
    assert (await console.client.get("/admin/tokens")).status == 403
    assert "/admin/tokens" not in await (await console.client.get("/admin/")).text()
    csrf = await console.csrf("/admin/")
    assert (await console.client.post("/admin/tokens", data=_form(csrf))).status == 403
    made = await asyncio.to_thread(TokenRepository(console.db).create, "bob@example.com",
                                   expires_in=None)
    refused = await console.client.post(f"/admin/tokens/{made.token.id}/revoke",
                                        data={"csrf": csrf})
    assert refused.status == 403
    assert await asyncio.to_thread(TokenRepository(console.db).verify, made.secret)
