"""The console in real headless Chromium: sign in, a question's candidates, charts, sync now."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from storage.channel_policies import ChannelPolicyRepository
from tests.admin.conftest import ADMIN_PW, Console
from tests.browser import open_page, run, wait_for
from tests.browser import shot as _shot


async def shot(driver: WebDriver, name: str) -> None:
    await _shot(driver, "admin", name)


@pytest.fixture
async def site(console: Console) -> AsyncIterator[str]:
    """The console on a real loopback port (the test client's server is one)."""
    server = console.client.server
    yield str(server.make_url("")).rstrip("/")


async def sign_in(driver: WebDriver, base: str, path: str, css: str) -> list[WebElement]:
    """Ask for a page, meet the sign-in form, sign in, land on the page: its `css` elements."""
    await run(driver.delete_all_cookies)
    (field,) = await open_page(driver, base + path, "#password")
    await run(field.send_keys, ADMIN_PW)
    (button,) = await wait_for(driver, ".login button")
    await run(button.click)
    found = await wait_for(driver, css)
    assert (await run(lambda: driver.current_url)).endswith(path)
    return found


async def test_sign_in_and_open_a_question(browser: WebDriver, site: str) -> None:
    rows = await sign_in(browser, site, "/admin/questions/21", "#candidates tbody tr")
    assert len(rows) == 4
    cells = await wait_for(browser, "td.reason")
    reasons = [await run(lambda c=c: c.text) for c in cells]
    assert reasons == [f"covers part {n}" for n in range(4)]
    assert "cited" in (await run(rows[0].get_attribute, "class") or "")
    await shot(browser, "question")
    await open_page(browser, site + "/admin/questions", "table.list tbody tr")
    await shot(browser, "questions")


async def test_the_overview_chart_renders(browser: WebDriver, site: str) -> None:
    (chart,) = await sign_in(browser, site, "/admin/?window=90d", "#chart-questions svg")
    size = await run(lambda: chart.size)
    assert size["width"] > 300 and size["height"] > 80
    bars = await run(chart.find_elements, By.TAG_NAME, "rect")
    assert len(bars) > 20
    heights = [await run(lambda b=b: b.rect["height"]) for b in bars[:5]]
    assert all(h > 0 for h in heights)
    await shot(browser, "overview")


async def test_sync_now(browser: WebDriver, site: str) -> None:
    await sign_in(browser, site, "/admin/sources", ".source")
    (button,) = await run(browser.find_elements, By.XPATH,
                          "//section[@id='source-handbook']//button[text()='Sync now']")
    await run(button.click)
    (notice,) = await wait_for(browser, "p.notice")
    assert (await run(lambda: notice.text)).startswith("Sync of handbook started")
    text = ""
    for _ in range(100):
        first = (await open_page(browser, site + "/admin/sources", ".source tbody tr"))[0]
        text = await run(lambda f=first: f.text)
        if "incremental ok" in text:  # the seeded newest run is "partial"
            break
        await asyncio.sleep(0.2)
    assert "incremental ok" in text
    await shot(browser, "sources")


async def test_the_other_pages_render(browser: WebDriver, site: str) -> None:
    assert await sign_in(browser, site, "/admin/gaps?window=90d", "section.gap")
    await shot(browser, "gaps")
    assert await open_page(browser, site + "/admin/documents", "table.list tbody tr")
    await shot(browser, "documents")
    assert await open_page(browser, site + "/admin/evaluation", "section.eval svg")
    # The chart `sift eval` drew is an image the browser loaded and decoded (400 px wide).
    (image,) = await wait_for(browser, "section.eval img")
    width = 0
    for _ in range(300):
        width = await run(browser.execute_script,
                          "return arguments[0].complete ? arguments[0].naturalWidth : -1",
                          image)
        if width != -1:
            break
        await asyncio.sleep(0.1)
    assert width == 400
    await shot(browser, "evaluation")


async def test_edit_a_channel_policy(browser: WebDriver, site: str,
                                     console: Console) -> None:
    (new,) = await sign_in(browser, site, "/admin/channels", "#new-policy")
    await run(new.click)
    (channel,) = await wait_for(browser, "#policy-channel")
    await run(channel.send_keys, "C0HELP001")
    (sources,) = await wait_for(browser, "#policy-sources")
    await run(sources.send_keys, "handbook")
    (respond,) = await wait_for(browser, "#policy-respond")
    await run(respond.send_keys, "questions")
    # One field to a line, not run together: each input starts below the one before it.
    (label,) = await wait_for(browser, "#policy-label")
    above, below = await run(lambda: channel.rect), await run(lambda: label.rect)
    assert below["y"] >= above["y"] + above["height"] and below["x"] == above["x"]
    (save,) = await wait_for(browser, "#policy-save")
    await run(save.click)
    (saved,) = await wait_for(browser, "#channels-saved")
    assert "slack:C0HELP001" in await run(lambda: saved.text)
    (row,) = await wait_for(browser, "#policies tbody tr")
    shown = await run(lambda: row.text)
    assert "sources: handbook; answers every question" in shown
    assert "=" not in shown and "False" not in shown and "[" not in shown  # no raw values
    await shot(browser, "channels")
    found = await asyncio.to_thread(ChannelPolicyRepository(console.db).get, "slack",
                                    "C0HELP001")
    assert found is not None and found.settings["respond"] == "questions"
    assert found.settings["sources"] == ["handbook"]


async def test_a_boost_is_confirmed_and_its_row_says_so(browser: WebDriver, site: str,
                                                        console: Console) -> None:
    from storage.overrides import OverrideRepository

    rows = await sign_in(browser, site, "/admin/documents?view=all", "table.list tbody tr")
    first = rows[0]
    doc_id = await run(lambda: first.find_element(By.CSS_SELECTOR, "td .hint").text)
    boost = await run(first.find_element, By.CSS_SELECTOR, "button[value='boost']")
    await run(boost.click)
    (notice,) = await wait_for(browser, "p.notice[role='status']")
    try:
        assert await run(lambda: notice.text) == f"{doc_id}: boosted."
        row = (await wait_for(browser, "table.list tbody tr"))[0]
        assert "boost" in [await run(lambda b=b: b.text) for b in
                           await run(row.find_elements, By.CSS_SELECTOR, ".badge")]
        page = await run(lambda: browser.page_source)
        assert "not on main yet" not in page
        await shot(browser, "documents-boosted")
    finally:
        await asyncio.to_thread(OverrideRepository(console.db).reset, doc_id)


async def test_a_run_with_failures_reads_partial_not_ok(browser: WebDriver, site: str) -> None:
    await sign_in(browser, site, "/admin/sources", "#source-handbook tbody tr")
    # The seeded run that failed one page (another test's "sync now" may have run since).
    runs = await wait_for(browser, "#source-handbook table tbody tr")
    texts = [await run(lambda r=r: r.text) for r in runs]
    failed = runs[next(i for i, t in enumerate(texts) if "HTTP 500" in t)]
    status = await run(failed.find_element, By.CSS_SELECTOR, ".status")
    # A warning colour and word, not a green "ok".
    assert await run(lambda: status.text) == "partial"
    assert "warning" in (await run(status.get_attribute, "class") or "")
    wiki = await wait_for(browser, "#source-wiki")
    assert "Not synced yet" in await run(lambda: wiki[0].text)  # no runs there: true


async def test_make_and_revoke_a_token(browser: WebDriver, site: str, console: Console) -> None:
    from storage.tokens import TokenRepository

    (email,) = await sign_in(browser, site, "/admin/tokens", "#token-email")
    await run(email.send_keys, "hana@acme.example")
    (label,) = await wait_for(browser, "#token-label")
    await run(label.send_keys, "Cursor")
    (create,) = await wait_for(browser, "#token-create")
    await run(create.click)
    (secret,) = await wait_for(browser, "#token-secret")
    shown = await run(lambda: secret.text)
    assert shown.startswith("sift_pat_") and await run(secret.is_displayed)
    repository = TokenRepository(console.db)
    token = await asyncio.to_thread(repository.verify, shown)
    assert token is not None and token.email == "hana@acme.example"
    await shot(browser, "tokens")
    (revoke,) = await wait_for(browser, f"#revoke-{token.id}")
    await run(revoke.click)
    (notice,) = await wait_for(browser, "#token-revoked")
    assert f"Token {token.id} is revoked" in await run(lambda: notice.text)
    assert not await run(browser.find_elements, By.ID, "token-secret")  # shown only once
    (state,) = await wait_for(browser, f"#token-{token.id} .state")
    assert await run(lambda: state.text) == "revoked"
    assert await asyncio.to_thread(repository.verify, shown) is None
