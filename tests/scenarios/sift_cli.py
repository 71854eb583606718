"""`sift` commands run in the test's process against a served Sift's database, Weaviate and
fake Claude, as an operator would run them beside `sift serve`."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot.cli import main
from tests.scenarios.stack import ServedSift


@contextlib.contextmanager
def cli_settings(served: ServedSift, mp: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment that points `sift` at the served Sift's stores and model."""
    settings = served.app.settings
    env = {"SIFT_DATABASE_URL": settings.database_url, "SIFT_DATA_DIR": str(settings.data_dir),
           "SIFT_WEAVIATE_URL": settings.weaviate_url,
           "SIFT_WEAVIATE__GRPC_URL": settings.weaviate.grpc_url,
           "SIFT_WEAVIATE__COLLECTION": settings.weaviate.collection,
           "SIFT_ANTHROPIC_BASE_URL": str(settings.anthropic_base_url),
           "SIFT_ANTHROPIC_API_KEY": "sk-test-key", "SIFT_LOG_LEVEL": "WARNING"}
    key = settings.weaviate_api_key
    if key is not None:
        env["SIFT_WEAVIATE_API_KEY"] = key.get_secret_value()
    for name, value in env.items():
        mp.setenv(name, value)
    yield


async def sift(*args: str) -> tuple[int, Any]:
    """Runs `sift ARGS` (which must succeed and print JSON); returns its code and output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = await asyncio.to_thread(main, list(args))
    assert code == 0, out.getvalue() + err.getvalue()
    return code, json.loads(out.getvalue())
