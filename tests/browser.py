"""Real headless Chromium for the page tests (admin console, web chat): Debian's chromium
through its own chromedriver; a missing browser fails the run with one sentence."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

ARTIFACTS_ROOT = Path(__file__).resolve().parent / "artifacts"
T = TypeVar("T")

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture(scope="session")
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
    ARTIFACTS_ROOT.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


async def run(call: Callable[..., T], *args: Any) -> T:
    """Every WebDriver call blocks until the browser answers, and the server shares this
    event loop: so each call waits in a thread, never on the loop."""
    return await asyncio.to_thread(call, *args)


async def shot(driver: WebDriver, folder: str, name: str) -> None:
    """A screenshot kept as a test artefact under tests/artifacts/<folder>/."""
    (ARTIFACTS_ROOT / folder).mkdir(parents=True, exist_ok=True)
    await run(driver.save_screenshot, str(ARTIFACTS_ROOT / folder / f"{name}.png"))


async def wait_for(driver: WebDriver, css: str) -> list[WebElement]:
    """The elements once the page that has them has loaded (60 s on a busy machine)."""
    wait = WebDriverWait(driver, 60)
    await run(wait.until, EC.presence_of_element_located((By.CSS_SELECTOR, css)))
    return await run(driver.find_elements, By.CSS_SELECTOR, css)


async def open_page(driver: WebDriver, url: str, css: str) -> list[WebElement]:
    await run(driver.get, url)
    return await wait_for(driver, css)
