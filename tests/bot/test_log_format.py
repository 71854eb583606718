"""SIFT_LOG_FORMAT=json: one JSON object per line with the correlation id; the access log
names the real client and never a query string."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import aiohttp
import pytest
from aiohttp import web

from bot.app import configure_logging
from bot.web import build_web_app, start_site
from rag.logcontext import correlated
from weaviate_server.process import free_port


class Stderr:
    """What Sift's log handler writes (to whatever sys.stderr is: pytest's capture here)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys
        self._seen = ""

    def getvalue(self) -> str:
        self._seen += self._capsys.readouterr().err
        return self._seen


@pytest.fixture
def stderr(capsys: pytest.CaptureFixture[str]) -> Iterator[Stderr]:
    root = logging.getLogger()
    level, handlers = root.level, root.handlers[:]
    yield Stderr(capsys)
    root.handlers[:], root.level = handlers, level


def lines(buffer: Stderr) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()
            if line.startswith("{")]


def test_json_lines_carry_the_correlation_id(stderr: Stderr) -> None:
    configure_logging("INFO", "json")
    with correlated("c0ffee42"):
        logging.getLogger("sift.test").warning("the index said %s", "no")
    logging.getLogger("sift.test").info('a "quoted"\nline')
    first, second = lines(stderr)
    assert first["message"] == "the index said no" and first["level"] == "WARNING"
    assert first["correlation_id"] == "c0ffee42" and first["logger"] == "sift.test"
    assert "time" in first
    assert second["message"] == 'a "quoted"\nline' and second["correlation_id"] == "-"


def test_text_lines_stay_as_they_were(stderr: Stderr) -> None:
    configure_logging("INFO")
    with correlated("c0ffee42"):
        logging.getLogger("sift.test").info("plain")
    assert stderr.getvalue().rstrip().endswith("INFO [c0ffee42] sift.test: plain")


async def test_the_access_log_has_no_query_string(stderr: Stderr) -> None:
    configure_logging("INFO", "json")

    async def callback(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = build_web_app({}, access_log=True)
    app.router.add_get("/admin/oidc/callback", callback)
    port = free_port()
    runner = await start_site(app, "127.0.0.1", port)  # as `sift serve` runs it
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as client:
            async with client.get("/admin/oidc/callback?code=s3cr3t-code&state=x") as reply:
                assert reply.status == 200
            async with client.get("/nowhere?token=t0ps3cr3t") as reply:
                assert reply.status == 404
            async with client.get("/livez") as reply:
                assert reply.status == 200
    finally:
        await runner.cleanup()
    access = [line for line in lines(stderr) if line["logger"] == "sift.access"]
    assert [(a["http_method"], a["http_path"], a["http_status"]) for a in access] == [
        ("GET", "/admin/oidc/callback", 200), ("GET", "/nowhere", 404)]  # probes: DEBUG
    assert all(a["client"] == "127.0.0.1" and float(str(a["duration_ms"])) >= 0
               for a in access)
    assert "s3cr3t" not in stderr.getvalue() and "t0ps3cr3t" not in stderr.getvalue()
