"""The real local embedder (all-MiniLM-L6-v2): shape, norm, batching, meaning."""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from rag.embed import LOCAL_MODEL_DIMENSION, LocalEmbedder
from rag.onnx_minilm import padded_width, token_batches
from rag.types import Vector

EXPENSES = "Submit receipts from business travel within thirty days to be paid back."
PARAPHRASE = "How can I get reimbursed after a work trip?"
UNRELATED = "Install the WireGuard client, import the profile, then sign in with SSO."

# Lengths differ so that a batch pads most texts; more than one batch of 32.
TEXTS = [EXPENSES, PARAPHRASE, UNRELATED, "VPN", "a " * 120] + [
    f"Runbook step {i}: restart worker {i} and watch the queue depth for {i * 3} minutes."
    for i in range(31)
]


def dot(a: Vector, b: Vector) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def max_gap(a: Vector, b: Vector) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


async def test_vectors_have_384_dimensions_and_unit_norm(embedder: LocalEmbedder) -> None:
    vectors = await embedder.embed_documents(TEXTS[:5])
    assert embedder.dimension == LOCAL_MODEL_DIMENSION == 384
    assert embedder.name == "local:all-MiniLM-L6-v2-static-int8-v3"  # the int8 default
    assert [len(v) for v in vectors] == [384] * 5
    for vector in vectors:
        assert math.sqrt(dot(vector, vector)) == pytest.approx(1.0, abs=1e-5)


async def test_a_batch_equals_the_texts_one_by_one(embedder: LocalEmbedder) -> None:
    """Padding never reaches a vector. The default graph multiplies in int8 and the rest in
    bfloat16 where the CPU can, and its kernels round differently for another batch shape:
    within 1e-5 of cosine, not bit for bit (a float32 runtime is held to 1e-5 per component
    below)."""
    batch = await embedder.embed_documents(TEXTS)
    single = [await embedder.embed_query(text) for text in TEXTS]
    assert len(batch) == len(TEXTS)
    assert min(dot(a, b) for a, b in zip(batch, single, strict=True)) > 1 - 1e-5


async def test_in_float32_a_batch_equals_the_texts_one_by_one_to_rounding() -> None:
    onnx = LocalEmbedder(backend="onnx")
    batch = await onnx.embed_documents(TEXTS)
    single = [await onnx.embed_query(text) for text in TEXTS]
    assert max(max_gap(a, b) for a, b in zip(batch, single, strict=True)) < 1e-5


async def test_a_paraphrase_is_closer_than_an_unrelated_text(embedder: LocalEmbedder) -> None:
    doc, question, other = await embedder.embed_documents([EXPENSES, PARAPHRASE, UNRELATED])
    assert dot(doc, question) > dot(doc, other) + 0.2


async def test_no_texts_give_no_vectors(embedder: LocalEmbedder) -> None:
    assert await embedder.embed_documents([]) == []


def test_batches_gather_texts_of_similar_token_counts() -> None:
    counts = [3, 120, 7, 118, 5, 64, 120]
    assert token_batches(counts, 3) == [[1, 6, 3], [5, 2, 4], [0]]
    assert token_batches([], 32) == []


def test_texts_short_of_a_full_batch_go_in_batches_of_powers_of_two() -> None:
    counts = [3, 120, 7, 118, 5, 64, 120]
    assert token_batches(counts, 32) == [[1, 6, 3, 5], [2, 4], [0]]
    sizes = [len(batch) for batch in token_batches([10] * 77, 32)]
    assert sizes == [32, 32, 8, 4, 1]
    assert [len(b) for b in token_batches([10] * 30, 24)] == [24, 4, 2]


def test_long_texts_go_in_smaller_batches() -> None:
    assert [len(b) for b in token_batches([250] * 30, 32, limit=256)] == [8, 8, 8, 4, 2]
    assert [len(b) for b in token_batches([100] * 40, 32, limit=256)] == [18, 18, 4]
    assert [len(b) for b in token_batches([500] * 3, 32, limit=512, max_tokens=256)] == [1] * 3


@pytest.mark.parametrize(("tokens", "limit", "width"), [
    (1, 256, 8), (8, 256, 8), (9, 256, 16), (17, 256, 24), (64, 256, 64), (65, 256, 80),
    (128, 256, 128), (129, 256, 160), (250, 256, 256), (190, 200, 192), (199, 200, 200),
    (257, 512, 320), (512, 512, 512),
])
def test_a_batch_is_padded_to_one_of_a_few_widths(tokens: int, limit: int, width: int) -> None:
    assert padded_width(tokens, limit) == width


async def test_the_model_sees_few_input_shapes_whatever_the_texts() -> None:
    """OpenVINO keeps memory for every input shape it runs: questions of every length and
    sync calls of every size must come down to a few shapes, with their vectors unchanged."""
    embedder = LocalEmbedder(batch_size=32)
    model = embedder._load()
    shapes: set[tuple[int, ...]] = set()
    infer = model.runtime.infer

    def recording(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        shapes.add(ids.shape)
        return infer(ids, mask)

    model.runtime = replace(model.runtime, infer=recording)
    questions = [" ".join(["rotate"] * n) + "?" for n in range(1, 220, 3)]
    alone = [await embedder.embed_query(q) for q in questions]
    for size in (3, 13, 32, 45):
        await embedder.embed_documents(TEXTS[:size])
    assert len(shapes) > 10
    assert {rows for rows, _ in shapes} <= {1, 2, 4, 8, 16, 32}
    assert len({width for _, width in shapes}) <= 17  # widths up to 256 tokens
    together = await embedder.embed_documents(questions)
    # In bfloat16 (AMX, AVX-512 BF16) the batch's shape changes how the products are summed:
    # 1e-4 of cosine seen on an AMX CPU. Padding the model attends to costs about 0.5.
    tolerance = 5e-4 if model.runtime.precision == "bf16" else 1e-5
    assert min(dot(a, b) for a, b in zip(alone, together, strict=True)) > 1 - tolerance


async def test_texts_long_in_letters_but_short_in_tokens_keep_their_vectors(
        embedder: LocalEmbedder) -> None:
    # Long words are few tokens, single letters one token each: the batches are made by
    # tokens, and every vector must still come back to its own text.
    texts = ["internationalisation " * 3, "a b c d e f g h i j k l", "ok", "x y z w v u"]
    batch = await embedder.embed_documents(texts)
    single = [await embedder.embed_query(text) for text in texts]
    assert min(dot(a, b) for a, b in zip(batch, single, strict=True)) > 1 - 1e-5


async def test_a_one_thread_model_runs_on_one_thread_and_gives_the_same_vectors() -> None:
    for backend in ("openvino", "onnx"):
        single = LocalEmbedder(threads=1, backend=backend)
        vectors = await single.embed_documents(TEXTS[:6])
        assert single._load().runtime.threads == 1
        expected = await LocalEmbedder(threads=2, backend=backend).embed_documents(TEXTS[:6])
        assert min(dot(a, b) for a, b in zip(vectors, expected, strict=True)) > 1 - 1e-5


async def test_on_every_core_each_core_embeds_a_batch_of_its_own_to_the_same_vectors() -> None:
    """threads=0 (a sync) runs OpenVINO in streams: several batches at once, each on its own
    core, rather than every core on one batch; the vectors are those of one batch at a time."""
    every_core = LocalEmbedder(threads=0, batch_size=4)
    model = every_core._load()
    assert (os.cpu_count() or 1) > 1, "this test needs a machine with two cores or more"
    assert model.runtime.streams > 1
    infer, lock = model.runtime.infer, threading.Lock()
    running, most = 0, 0

    def counting(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        try:
            time.sleep(0.01)  # long enough for the other stream to start
            return infer(ids, mask)
        finally:
            with lock:
                running -= 1

    model.runtime = replace(model.runtime, infer=counting)
    texts = TEXTS * 2  # 18 batches of 4
    vectors = await every_core.embed_documents(texts)
    assert most == model.runtime.streams
    one_at_a_time = await LocalEmbedder(threads=1, batch_size=4).embed_documents(texts)
    assert min(dot(a, b) for a, b in zip(vectors, one_at_a_time, strict=True)) > 1 - 1e-5


@pytest.mark.parametrize("backend", ["openvino", "onnx"])
async def test_a_question_asked_during_a_sync_is_embedded_beside_the_sync_batch(
        backend: str) -> None:
    """As `sift serve` runs it (one thread): a question that arrives while a documents call is
    running is embedded while that call's batch still runs, not after the batch or the call."""
    embedder = LocalEmbedder(threads=1, backend=backend)
    model = embedder._load()
    infer, document_running = model.runtime.infer, threading.Event()
    spans: dict[str, list[tuple[float, float]]] = {"document": [], "question": []}

    def timed(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        kind = "question" if ids.shape[0] == 1 else "document"
        started = time.perf_counter()
        if kind == "document":
            document_running.set()
        try:
            return infer(ids, mask)
        finally:
            spans[kind].append((started, time.perf_counter()))

    model.runtime = replace(model.runtime, infer=timed)
    long_texts = [f"{i} " + "credentials rotate " * 150 for i in range(16)]  # 2 batches of 8
    documents = asyncio.create_task(embedder.embed_documents(long_texts))
    assert await asyncio.to_thread(document_running.wait, 30)
    question = await embedder.embed_query("How do I rotate the staging database credentials?")
    assert len(await documents) == 16 and len(question) == LOCAL_MODEL_DIMENSION
    ((asked, answered),) = spans["question"]
    assert len(spans["document"]) == 2
    assert any(start < asked and answered < end for start, end in spans["document"])


async def test_a_cancelled_documents_call_skips_the_batches_it_has_not_started() -> None:
    """A sync stopped by shutdown: the worker finishes the batch in hand, skips the rest of
    the call, and is free for the next one."""
    embedder = LocalEmbedder(threads=1, batch_size=4)
    model = embedder._load()
    infer, running, release = model.runtime.infer, threading.Event(), threading.Event()
    batches = 0

    def held(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        nonlocal batches
        batches += 1
        running.set()
        release.wait(30)
        return infer(ids, mask)

    model.runtime = replace(model.runtime, infer=held)
    call = asyncio.create_task(embedder.embed_documents(TEXTS))  # 9 batches of 4
    assert await asyncio.to_thread(running.wait, 30)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    release.set()
    after = await embedder.embed_documents(TEXTS[:4])  # one batch
    assert batches == 2
    assert min(dot(a, b) for a, b in zip(
        after, await LocalEmbedder(threads=1).embed_documents(TEXTS[:4]), strict=True)) > 1 - 1e-5
