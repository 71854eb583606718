"""The console in real headless Chromium: sign in, a question's candidates, charts, sync now."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.admin.conftest import ADMIN_PW, Console

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "admin"
T = TypeVar("T")


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """Debian's chromium through its own chromedriver; selenium-manager never runs."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(f"The browser tests need {' and '.join(missing)}: install the Debian "
                    "packages chromium and chromium-driver (`make install` does, as root).",
                    pytrace=False)
    profile = tempfile.mkdtemp(prefix="sift-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1280,900",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
async def site(console: Console) -> AsyncIterator[str]:
    """The console on a real loopback port (the test client's server is one)."""
    server = console.client.server
    yield str(server.make_url("")).rstrip("/")


async def run(call: Callable[..., T], *args: Any) -> T:
    """Selenium blocks; the server shares this event loop, so the browser waits in a thread."""
    return await asyncio.to_thread(call, *args)


async def shot(driver: WebDriver, name: str) -> None:
    await run(driver.save_screenshot, str(ARTIFACTS / f"{name}.png"))


async def sign_in(driver: WebDriver, base: str, path: str) -> None:
    await run(driver.delete_all_cookies)
    await run(driver.get, base + path)
    assert "/admin/login" in driver.current_url
    field = await run(driver.find_element, By.ID, "password")
    await run(field.send_keys, ADMIN_PW)
    await run((await run(driver.find_element, By.CSS_SELECTOR, "form button")).click)


async def test_sign_in_and_open_a_question(browser: WebDriver, site: str) -> None:
    await sign_in(browser, site, "/admin/questions/21")
    assert browser.current_url.endswith("/admin/questions/21")
    rows = await run(browser.find_elements, By.CSS_SELECTOR, "#candidates tbody tr")
    assert len(rows) == 4
    reasons = [r.text for r in await run(browser.find_elements, By.CSS_SELECTOR, "td.reason")]
    assert reasons == [f"covers part {n}" for n in range(4)]
    assert "cited" in (await run(rows[0].get_attribute, "class") or "")
    await shot(browser, "question")
    await run(browser.get, site + "/admin/questions")
    await shot(browser, "questions")


async def test_the_overview_chart_renders(browser: WebDriver, site: str) -> None:
    await sign_in(browser, site, "/admin/?window=90d")
    chart = await run(browser.find_element, By.CSS_SELECTOR, "#chart-questions svg")
    size = chart.size
    assert size["width"] > 300 and size["height"] > 80
    bars = await run(chart.find_elements, By.TAG_NAME, "rect")
    assert len(bars) > 20
    assert all(b.rect["height"] >= 0 for b in bars[:5])
    await shot(browser, "overview")


async def test_sync_now(browser: WebDriver, site: str) -> None:
    await sign_in(browser, site, "/admin/sources")
    button = await run(browser.find_element, By.XPATH, "//button[text()='Sync now']")
    await run(button.click)
    notice = await run(browser.find_element, By.CSS_SELECTOR, "p.notice")
    assert notice.text.startswith("Sync of handbook started")
    for _ in range(100):
        await run(browser.get, site + "/admin/sources")
        first = await run(browser.find_element, By.CSS_SELECTOR, ".source tbody tr")
        if "incremental ok" in first.text:  # the seeded newest run is "partial"
            break
        await asyncio.sleep(0.2)
    assert "incremental ok" in first.text
    await shot(browser, "sources")


async def test_the_other_pages_render(browser: WebDriver, site: str) -> None:
    await sign_in(browser, site, "/admin/gaps?window=90d")
    groups = await run(browser.find_elements, By.CSS_SELECTOR, "section.gap")
    assert groups
    await shot(browser, "gaps")
    for name, path, selector in (("documents", "/admin/documents", "table.list tbody tr"),
                                 ("evaluation", "/admin/evaluation", "section.eval svg")):
        await run(browser.get, site + path)
        assert await run(browser.find_elements, By.CSS_SELECTOR, selector)
        await shot(browser, name)

