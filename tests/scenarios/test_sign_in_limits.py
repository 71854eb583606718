"""The console's sign-in limits through `sift serve` behind a trusted proxy, with the
attacker's requests: one guesser locks out only themselves, a guesser spread over many
addresses slows password sign-ins down (never locks the right password out), and a browser
that signed in before is not held back by strangers at all. Each refusal is logged."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

from bot.app import App
from rag.embed import LocalEmbedder
from tests.fakes.anthropic_server import FakeAnthropic
from tests.scenarios.stack import ServedSift, corpus, settings_for  # noqa: F401
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate

PROXY = "127.0.0.5"  # the reverse proxy's own address; everyone comes through it
PASSWORD = "the console's real passphrase"
ATTEMPTS = 3  # per address per window; ten times that from everyone starts the backoff


@dataclass
class Browser:
    """One person's browser behind the proxy: their address, and the cookies it keeps."""

    base: str
    address: str
    cookies: dict[str, str] = field(default_factory=dict)

    async def _send(self, method: str, path: str, **kw: object) -> tuple[int, str]:
        connector = aiohttp.TCPConnector(local_addr=(PROXY, 0), force_close=True)
        headers = {"X-Forwarded-For": self.address, "X-Forwarded-Proto": "http",
                   "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        async with aiohttp.ClientSession(connector=connector) as session, session.request(
                method, self.base + path, headers=headers, allow_redirects=False,
                **kw) as response:  # type: ignore[arg-type]
            for name, morsel in response.cookies.items():
                self.cookies[name] = morsel.value
            return response.status, await response.text()

    async def sign_in(self, password: str) -> tuple[int, str]:
        _, page = await self._send("GET", "/admin/login")
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        assert token is not None
        return await self._send("POST", "/admin/login",
                                data={"csrf": token.group(1), "password": password})


Open = Callable[[str], Awaitable[Browser]]


@pytest.fixture
async def browser(tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str,  # noqa: F811
                  embedder: LocalEmbedder, fake_anthropic: FakeAnthropic
                  ) -> AsyncIterator[Open]:
    settings = settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[],
                            trusted_proxies=[PROXY],
                            admin={"password": PASSWORD, "login_attempts": ATTEMPTS})
    app = App(settings)
    app.__dict__["embedder"] = embedder
    sift = ServedSift(app)
    await sift.start()

    async def open_one(address: str) -> Browser:
        return Browser(sift.base_url, address)

    yield open_one
    await sift.stop()


async def test_one_guesser_locks_out_only_themselves(browser: Open,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    guesser, colleague = await browser("203.0.113.7"), await browser("203.0.113.8")
    for _ in range(ATTEMPTS):
        assert (await guesser.sign_in("a guess"))[0] == 401
    status, page = await guesser.sign_in(PASSWORD)
    assert status == 429 and "try again in 5 minutes" in page
    assert (await colleague.sign_in(PASSWORD))[0] == 303
    assert "sign-in from 203.0.113.7 refused" in caplog.text  # the real client, logged


async def test_guesses_from_many_addresses_slow_sign_ins_but_never_lock_them(
        browser: Open, caplog: pytest.LogCaptureFixture) -> None:
    regular = await browser("198.51.100.20")
    assert (await regular.sign_in(PASSWORD))[0] == 303  # this browser has signed in before
    caplog.set_level(logging.INFO)
    for n in range(ATTEMPTS * 10):  # a botnet: each address guesses once
        bot = await browser(f"203.0.113.{n + 10}")
        assert (await bot.sign_in("a guess"))[0] == 401
    newcomer = await browser("198.51.100.30")
    status, page = await newcomer.sign_in(PASSWORD)
    assert status == 429, page
    waited = re.search(r"try again in (\d+) seconds?", page)
    assert waited is not None and int(waited.group(1)) <= 10  # seconds, not minutes
    assert "backing off" in caplog.text
    # The browser that signed in before is not held back by the strangers' failures.
    assert (await regular.sign_in(PASSWORD))[0] == 303
    # And the newcomer's right password gets in once the backoff has passed.
    await asyncio.sleep(int(waited.group(1)) + 0.2)
    assert (await newcomer.sign_in(PASSWORD))[0] == 303


async def test_a_forged_device_cookie_is_no_way_around_the_backoff(browser: Open) -> None:
    for n in range(ATTEMPTS * 10):
        bot = await browser(f"203.0.113.{n + 10}")
        assert (await bot.sign_in("a guess"))[0] == 401
    forger = await browser("198.51.100.40")
    forger.cookies["sift_admin_device"] = "made-up-device-token"
    assert (await forger.sign_in(PASSWORD))[0] == 429
