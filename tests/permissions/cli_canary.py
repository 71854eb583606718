"""The chat sources' CLI canaries: `sift` in-process with its output kept, who sees what."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Callable, Sequence

from bot.cli import main
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from tests.conftest import index_config
from weaviate_server.process import ManagedWeaviate


async def sift(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = await asyncio.to_thread(main, list(args))  # the fake answers on this loop
    return code, out.getvalue(), err.getvalue()


async def seen_by(askers: Sequence[str], question: str,
                  marks: Callable[[str], set[str]]) -> dict[str, set[str]]:
    """The markers each asker's `sift ask --json` shows ("public": without --as)."""
    seen = {}
    for email in ("public", *askers):
        who = () if email == "public" else ("--as", email)
        code, out, err = await sift("ask", "--json", *who, question)
        assert code == 0, out + err
        json.loads(out)  # one JSON report: the answer, its excerpts and candidates
        seen[email] = marks(out)
    return seen


async def drop(server: ManagedWeaviate, embedder: LocalEmbedder, collection: str) -> None:
    index = WeaviateIndex(index_config(server, collection), embedder.name, embedder.dimension)
    await index.connect(ensure=False)
    await index.drop()
    await index.close()
