"""The web chat over real HTTP (aiohttp server on loopback), on the shared chat flow with
in-memory stores; rendering tables with hostile text."""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from bot.chat.service import ChatLimits, ChatService
from bot.web import build_web_app
from bot.webchat.app import USER_COOKIE, WebChat
from bot.webchat.render import render_answer, to_html
from rag import messages
from rag.types import Answer, AnswerStatus, Citation, Question
from tests.browser import run, shot, wait_for
from tests.fakes.chat import make_flow
from tests.fakes.http import LocalServer
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_pipeline
from tests.rag.corpus import CHUNKS

STAGING = "How do I rotate the staging database credentials?"


class ChatWeb(LocalServer):
    def __init__(self, chat: WebChat) -> None:
        super().__init__()
        self.app = build_web_app({})
        chat.mount(self.app)


@pytest.fixture(scope="module")
async def index(embedder: Any) -> MemoryIndex:
    memory = MemoryIndex()
    await memory.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    return memory


class Browser:
    """What the page's script does: load the page, keep its cookie and token, post JSON."""

    def __init__(self, url: str, session: aiohttp.ClientSession) -> None:
        self.url, self.session, self.csrf = url, session, ""

    async def open(self) -> str:
        async with self.session.get(self.url + "/") as response:
            page = await response.text()
        found = re.search(r'name="sift-csrf" content="([0-9a-f]+)"', page)
        assert found
        self.csrf = found.group(1)
        return page

    async def ask(self, question: str, **extra: Any) -> tuple[int, list[tuple[str, Any]]]:
        body = {"question": question, "csrf": self.csrf, **extra}
        async with self.session.post(self.url + "/chat/ask", json=body) as response:
            raw = await response.text()
        events = re.findall(r"event: (\w+)\ndata: (.*)\n\n", raw)
        return response.status, [(e, json.loads(d)) for e, d in events]

    async def vote(self, ref: str, vote: int) -> tuple[int, str]:
        body = {"ref": ref, "vote": vote, "csrf": self.csrf}
        async with self.session.post(self.url + "/chat/vote", json=body) as response:
            return response.status, await response.text()


@pytest.fixture
async def served(index: MemoryIndex, embedder: Any) -> AsyncIterator[tuple[Browser,
                                                                          MemoryChatStores]]:
    stores = MemoryChatStores()
    pipeline = make_pipeline(index, embedder, None, recorder=stores.interactions)
    service = ChatService(pipeline, stores.chat_stores(), ChatLimits(max_message_chars=200))
    web = ChatWeb(WebChat(make_flow(service), max_chars=200))
    await web.start()
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield Browser(web.url, session), stores
    await web.stop()


async def test_the_page_answers_streams_and_takes_a_vote(
        served: tuple[Browser, MemoryChatStores]) -> None:
    browser, stores = served
    page = await browser.open()
    assert "Ask Sift" in page and "/chat/static/chat.js" in page
    status, events = await browser.ask(STAGING)
    assert status == 200
    names = [e for e, _ in events]
    assert names[0] == "working" and names[-2:] == ["answer", "done"]
    answer = dict(events)["answer"]
    assert answer["status"] == "answered" and answer["ref"]
    assert 'href="https://wiki.example/staging-creds"' in answer["html"]
    [row] = stores.interactions.rows.values()
    assert row.channel == "web" and row.message_ref == answer["ref"]
    assert (await browser.vote(answer["ref"], -1))[0] == 200
    [(key, vote)] = stores.feedback.votes.items()
    assert vote.vote == -1 and key[1].startswith("web-")


async def test_follow_ups_use_the_conversation(served: tuple[Browser, MemoryChatStores]) -> None:
    browser, stores = served
    await browser.open()
    await browser.ask(STAGING)
    await browser.ask("and for production?")
    [history] = stores.history.turns.values()
    assert [role for role, _ in history] == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize("tamper", ["no-token", "wrong-token", "non-ascii-token", "no-cookie"])
async def test_requests_the_page_did_not_make_are_refused(
        served: tuple[Browser, MemoryChatStores], tamper: str) -> None:
    browser, stores = served
    await browser.open()
    if tamper == "no-token":
        browser.csrf = ""
    elif tamper == "wrong-token":
        browser.csrf = "0" * 64
    elif tamper == "non-ascii-token":
        browser.csrf = "é" * 64
    else:
        browser.session.cookie_jar.clear()
    status, events = await browser.ask(STAGING)
    assert status == 403 and events == [] and stores.interactions.rows == {}
    assert (await browser.vote("anything", 1))[0] == 403


async def test_two_open_pages_of_one_browser_both_ask(
        served: tuple[Browser, MemoryChatStores]) -> None:
    browser, _ = served
    await browser.open()
    first = browser.csrf
    await browser.open()  # a second tab
    assert browser.csrf == first
    assert (await browser.ask(STAGING))[0] == 200


async def test_a_token_is_bound_to_its_visitor(served: tuple[Browser, MemoryChatStores]) -> None:
    browser, _ = served
    await browser.open()
    stolen = browser.csrf
    browser.session.cookie_jar.clear()
    await browser.open()  # a new visitor
    browser.csrf = stolen
    assert (await browser.ask(STAGING))[0] == 403


async def test_bad_input_gets_one_sentence(served: tuple[Browser, MemoryChatStores]) -> None:
    browser, _ = served
    await browser.open()
    status, events = await browser.ask("x" * 300)
    assert status == 200 and events[0] == ("notice", {
        "html": html.escape(messages.TOO_LONG.format(length=201, limit=200))})
    assert json.loads((await browser.vote("nope", 1))[1]) == {
        "html": html.escape(messages.UNKNOWN_ANSWER_FEEDBACK)}
    assert (await browser.vote("x", 5))[0] == 400
    async with browser.session.post(browser.url + "/chat/ask", data=b"{not json") as response:
        assert response.status == 400


async def test_the_cookie_is_http_only_and_same_site(
        served: tuple[Browser, MemoryChatStores]) -> None:
    browser, _ = served
    async with browser.session.get(browser.url + "/") as response:
        cookie = response.headers["Set-Cookie"]
        assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
    assert cookie.startswith(f"{USER_COOKIE}=web-") and "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie


def answer(text: str, citations: tuple[Citation, ...] = ()) -> Answer:
    return Answer(text, AnswerStatus.ANSWERED, Question("q"), citations=citations)


@pytest.mark.parametrize(("text", "present", "absent"), [
    ("<script>alert(1)</script>", "&lt;script&gt;", "<script"),
    ("<img src=x onerror=alert(1)>", "&lt;img", "<img"),
    # A link to an unsafe scheme keeps its words and loses the link (and the scheme).
    ("[click](javascript:alert(1))", "<p>click</p>", "javascript"),
    ("`<b>` stays code", "<code>&lt;b&gt;</code>", "<b>"),
    ("**bold** and [1]", "<strong>bold</strong>", "javascript"),
])
def test_answer_text_is_escaped(text: str, present: str, absent: str) -> None:
    shown = to_html(text, {})
    assert present in shown and absent not in shown


def test_only_http_sources_become_links() -> None:
    shown = render_answer(answer("See [1] and [2].", (
        Citation(1, "a", "<b>Runbook</b>", "https://wiki.example/a", "a#0"),
        Citation(2, "b", "Evil", "javascript:alert(1)", "b#0"))))
    assert 'href="https://wiki.example/a"' in shown and "javascript:" not in shown
    assert "&lt;b&gt;Runbook&lt;/b&gt;" in shown


async def test_the_page_in_a_real_browser(served: tuple[Browser, MemoryChatStores],
                                          browser: WebDriver) -> None:
    """Headless Chromium: ask, watch the answer arrive with its sources, vote on it."""
    client, stores = served
    await run(browser.get, client.url + "/")
    field = (await wait_for(browser, "textarea#question"))[0]
    await run(field.send_keys, STAGING)
    await run(field.send_keys, Keys.ENTER)
    links = await wait_for(browser, ".turn.answer.answered .sources a")
    assert "https://wiki.example/staging-creds" in [
        await run(link.get_attribute, "href") for link in links]
    [question] = await wait_for(browser, ".turn.question")
    assert await run(lambda: question.text) == STAGING
    up, down = await wait_for(browser, ".votes button")
    # Words beside the emoji, for a font that lacks them.
    assert (await run(lambda: up.text), await run(lambda: down.text)) == (
        "👍 Helpful", "👎 Not helpful")
    await run(up.click)
    await wait_for(browser, ".votes .said")
    await shot(browser, "webchat", "answered")
    [vote] = stores.feedback.votes.values()
    assert vote.vote == 1 and vote.channel == "button"


@pytest.mark.parametrize(("sources", "hint"), [
    ([], "What is the expense limit for client dinners?"),
    ([{"name": "handbook", "kind": "folder", "path": "/srv/handbook"}],
     "Ask a question about your documents"),
])
def test_the_question_box_suggests_the_sample_only_while_the_sample_is_in_use(
        sources: list[dict[str, str]], hint: str) -> None:
    from bot.settings import Settings
    from bot.webchat.spec import config

    assert config(Settings(sources=sources)).placeholder == hint


async def test_the_page_shows_its_placeholder_escaped(index: MemoryIndex, embedder: Any) -> None:
    stores = MemoryChatStores()
    service = ChatService(make_pipeline(index, embedder, None), stores.chat_stores(),
                          ChatLimits())
    web = ChatWeb(WebChat(make_flow(service), placeholder='Ask "HR" <anything>'))
    await web.start()
    try:
        async with aiohttp.ClientSession() as session, session.get(web.url + "/") as page:
            text = await page.text()
    finally:
        await web.stop()
    assert 'placeholder="Ask &quot;HR&quot; &lt;anything&gt;"' in text
    assert "{{placeholder}}" not in text


async def test_hostile_text_stays_text_in_the_browser(
        served: tuple[Browser, MemoryChatStores], browser: WebDriver) -> None:
    client, _ = served
    await run(browser.get, client.url + "/")
    field = (await wait_for(browser, "textarea#question"))[0]
    await run(field.send_keys, "<img src=x onerror=alert(1)> what is <b>this</b>?")
    await run(field.send_keys, Keys.ENTER)
    await wait_for(browser, ".turn.answer:not(.working)")
    [question] = await wait_for(browser, ".turn.question")
    assert "<img src=x" in await run(lambda: question.text)  # shown, not parsed
    assert await run(browser.find_elements, By.CSS_SELECTOR, ".turn img") == []


def test_inline_code_stays_in_its_quote_and_fences_are_blocks() -> None:
    shown = to_html("> Run `vault write x` and restart.\n\n```\nmake <all>\n```", {})
    assert shown.replace("\n", "") == (
        "<blockquote><p>Run <code>vault write x</code> and restart.</p></blockquote>"
        "<pre><code>make &lt;all&gt;</code></pre>")


async def test_a_page_from_one_replica_asks_another(index: MemoryIndex, embedder: Any) -> None:
    """Behind a load balancer the page and the question may reach different processes."""
    stores = MemoryChatStores()
    service = ChatService(make_pipeline(index, embedder, None, recorder=stores.interactions),
                          stores.chat_stores(), ChatLimits())
    replicas = [ChatWeb(WebChat(make_flow(service))) for _ in range(2)]
    for replica in replicas:
        await replica.start()
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            browser = Browser(replicas[0].url, session)
            await browser.open()
            browser.url = replicas[1].url
            status, events = await browser.ask(STAGING)
    finally:
        for replica in replicas:
            await replica.stop()
    assert status == 200 and dict(events)["answer"]["status"] == "answered"


def test_quoted_excerpts_render_as_what_they_are() -> None:
    """Fast mode quotes excerpts line by line; the page shows their headings, tables, lists
    and code inside the quote, not the characters that mark them."""
    excerpt = ("> _Limits_\n>\n> ## Meals and daily costs\n> | City | Dinner |\n"
               "> |---|---|\n> | Toronto | 90 CAD |\n>\n> - receipts within 30 days\n"
               "> - itemised\n>\n> ```\n> expense submit --id 7\n> ```")
    shown = to_html(f"**Expenses** [1]\n{excerpt}", {1: "https://kb.example/expenses"})
    assert "<blockquote>" in shown and "<table>" in shown and "<td>Toronto</td>" in shown
    assert "<h4>Meals and daily costs</h4>" in shown and "<em>Limits</em>" in shown
    assert "<li>receipts within 30 days</li>" in shown
    assert "<pre><code>expense submit --id 7" in shown
    assert '<a class="cite" href="https://kb.example/expenses"' in shown
    for raw in ("&gt; ", "|---", "## ", "```", "_Limits_"):
        assert raw not in shown, raw


async def test_the_browsers_language_picks_sifts_sentences(
        served: tuple[Browser, MemoryChatStores]) -> None:
    browser, _ = served
    await browser.open()
    german = {"Accept-Language": "de-CH, de;q=0.9, en;q=0.5"}
    body = {"question": "x" * 300, "csrf": browser.csrf}
    async with browser.session.post(browser.url + "/chat/ask", json=body,
                                    headers=german) as response:
        raw = await response.text()
    assert "Diese Nachricht ist mir zu lang (201 Zeichen; die Grenze liegt bei 200)." in \
        json.loads(raw.split("data: ", 1)[1].split("\n", 1)[0])["html"]
    body = {"ref": "nope", "vote": 1, "csrf": browser.csrf}
    async with browser.session.post(browser.url + "/chat/vote", json=body,
                                    headers={"Accept-Language": "ja"}) as response:
        said = await response.json()
    assert said == {"html": "このフィードバックの対象となる回答が見つかりませんでした。"}
    status, events = await browser.ask(STAGING)  # no header: English
    assert status == 200 and events[0] == ("working", {"text": messages.TEAMS_WORKING})
