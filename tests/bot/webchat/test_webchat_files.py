"""The web chat's files in real Chromium: a screenshot picked, pasted or dropped on the page
is read (OCR: no model here) and the answer cites the page covering its error."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from bot.chat.files import FileReader
from bot.chat.service import ChatLimits, ChatService
from bot.settings import FilesSettings
from bot.web import build_web_app
from bot.webchat.app import WebChat
from rag import messages
from tests.browser import run, shot, wait_for
from tests.fakes.chat import make_flow
from tests.fakes.http import LocalServer
from tests.fakes.memory_chat_stores import MemoryChatStores
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.screenshots import VPN_URL, broken_png, screenshot, vpn_troubleshooting
from tests.rag.builders import make_pipeline
from tests.rag.corpus import CHUNKS

ASKED = "what does this error mean?"
# A paste or a drop as the browser hands it to the page: a File in a DataTransfer.
DISPATCH = """
const [kind, name, data] = arguments;
const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
const moved = new DataTransfer();
moved.items.add(new File([bytes], name, { type: "image/png" }));
const field = document.getElementById("question");
const event = kind === "paste"
  ? new ClipboardEvent("paste", { clipboardData: moved, bubbles: true, cancelable: true })
  : new DragEvent("drop", { dataTransfer: moved, bubbles: true, cancelable: true });
field.dispatchEvent(event);
"""


class ChatWeb(LocalServer):
    def __init__(self, chat: WebChat) -> None:
        super().__init__()
        self.app = build_web_app({})
        chat.mount(self.app)


@pytest.fixture
async def page_url(embedder: Any) -> AsyncIterator[str]:
    index = MemoryIndex()
    chunks = [*CHUNKS, vpn_troubleshooting()]
    await index.upsert(
        chunks, await embedder.embed_documents([f"{c.title}\n{c.text}" for c in chunks])
    )
    stores = MemoryChatStores()
    service = ChatService(make_pipeline(index, embedder, None), stores.chat_stores(), ChatLimits())
    web = ChatWeb(WebChat(make_flow(service, files=FileReader(FilesSettings()))))
    await web.start()
    yield web.url
    await web.stop()


async def _answered(browser: WebDriver) -> str:
    [answer] = await wait_for(browser, ".turn.answer:not(.working)")
    return str(await run(answer.get_attribute, "innerHTML"))


@pytest.mark.parametrize("how", ["pick", "paste", "drop"])
async def test_a_screenshot_on_the_page_is_read_and_its_error_answered(
    page_url: str, browser: WebDriver, tmp_path: Path, how: str
) -> None:
    await run(browser.get, page_url + "/")
    field = (await wait_for(browser, "textarea#question"))[0]
    png = screenshot()
    if how == "pick":
        path = tmp_path / "error.png"
        path.write_bytes(png)
        [picker] = await wait_for(browser, "input#attach")
        await run(picker.send_keys, str(path))
    else:
        await run(
            browser.execute_script, DISPATCH, how, "error.png", base64.b64encode(png).decode()
        )
    await wait_for(browser, "#attached .file")
    await run(field.send_keys, ASKED)
    await run(field.send_keys, Keys.ENTER)
    shown = await _answered(browser)
    await shot(browser, "webchat", f"screenshot-{how}")
    assert "From your screenshot: <code>Relay Connect Handshake did not complete</code>" in shown
    assert VPN_URL in shown
    assert await run(browser.find_elements, "css selector", "#attached .file") == []


async def test_a_broken_image_alone_gets_one_sentence(page_url: str) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(page_url + "/") as response:
            page = await response.text()
        csrf = page.split('name="sift-csrf" content="', 1)[1].split('"', 1)[0]
        body = {
            "question": "",
            "csrf": csrf,
            "files": [
                {
                    "name": "broken.png",
                    "type": "image/png",
                    "data": base64.b64encode(broken_png()).decode(),
                }
            ],
        }
        async with session.post(page_url + "/chat/ask", json=body) as response:
            raw = await response.text()
    assert messages.FILE_UNREADABLE.format(name="broken.png") in raw
    assert "event: answer" not in raw
