"""The int8 embedding graph against the fp32 one on dev-corpus chunks: cosine, speed, CPU time.

Run:  .venv/bin/python -m bench.embed_int8 [--chunks 400] [--rounds 2] [--json out.json]

Embeds a seeded sample of the AWS pages' chunks (as the sync job makes them) with Sift's fp32
graph (`onnx`), its int8 graph (`onnx-int8`: per-token activation scales), and the graph ONNX
Runtime's `quantize_dynamic` makes (one activation scale per tensor; what `onnx-int8` was
before). Reports each one's cosine to the fp32 vectors (min, 1st percentile, mean), texts/s and
the process CPU seconds, with ratios to fp32. The timed passes alternate between the graphs,
so a busy machine slows them alike; the CPU-time ratio is the steadier figure on a shared
machine. Needs no torch.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.embed_equivalence import CORPUS, sample_chunks
from rag.embed import LocalEmbedder, _model_path
from rag.onnx_minilm import OnnxMiniLM

BATCH = 32
Runner = Callable[[list[str]], np.ndarray]


def per_tensor_graph(scratch: Path) -> Path:
    """The earlier int8 graph: quantize_dynamic, s8 per-channel weights, u8 per-tensor inputs."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from rag.minilm_graph import build_graph

    onnx.save(build_graph(_model_path()), str(scratch / "full.onnx"))
    quantize_dynamic(scratch / "full.onnx", scratch / "per-tensor.onnx",
                     weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return scratch / "per-tensor.onnx"


def runners(scratch: Path) -> dict[str, Runner]:
    fp32 = LocalEmbedder(batch_size=BATCH, backend="onnx", cache_dir=scratch)
    int8 = LocalEmbedder(batch_size=BATCH, backend="onnx-int8", cache_dir=scratch)
    before = OnnxMiniLM(per_tensor_graph(scratch), _model_path() / "tokenizer.json", 256)
    return {"fp32 (onnx)": lambda texts: np.asarray(fp32.encode_now(texts)),
            "int8, per-token scales (onnx-int8)": lambda texts: np.asarray(int8.encode_now(texts)),
            "int8, quantize_dynamic (before)": lambda texts: before.encode(texts, BATCH)}


def measure(texts: list[str], named: dict[str, Runner], rounds: int) -> dict[str, dict]:
    for run in named.values():
        run(texts[:BATCH])  # load, build, warm up
    wall, cpu = dict.fromkeys(named, 0.0), dict.fromkeys(named, 0.0)
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, run in named.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            vectors[name] = run(texts)
            wall[name] += time.perf_counter() - started
            cpu[name] += time.process_time() - cpu_started
    reference, base = vectors["fp32 (onnx)"], "fp32 (onnx)"
    result = {}
    for name in named:
        cosines = (vectors[name] * reference).sum(axis=1)  # all unit length
        result[name] = {"cosine_min": round(float(cosines.min()), 5),
                        "cosine_p1": round(float(np.percentile(cosines, 1)), 5),
                        "cosine_mean": round(float(cosines.mean()), 5),
                        "texts_per_s": round(len(texts) * rounds / wall[name], 1),
                        "speed_vs_fp32": round(wall[base] / wall[name], 2),
                        "cpu_s": round(cpu[name], 1),
                        "cpu_vs_fp32": round(cpu[base] / cpu[name], 2)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--chunks", type=int, default=400, help="how many chunks to embed")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes per graph")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    texts = sample_chunks(args.corpus, args.chunks, args.seed)
    with tempfile.TemporaryDirectory(prefix="sift-bench-int8-") as scratch:
        result = measure(texts, runners(Path(scratch)), args.rounds)
    print(f"{len(texts)} chunks of the dev corpus, {args.rounds} timed passes each")
    for name, row in result.items():
        print(f"{name:36s} cosine to fp32 min {row['cosine_min']:.5f}  p1 {row['cosine_p1']:.5f}"
              f"  mean {row['cosine_mean']:.5f}  {row['texts_per_s']:6.1f} texts/s "
              f"({row['speed_vs_fp32']:.2f}x)  CPU {row['cpu_s']:.1f} s "
              f"(fp32 / this: {row['cpu_vs_fp32']:.2f})")
    if args.json:
        args.json.write_text(json.dumps({"chunks": len(texts), "rounds": args.rounds,
                                         "graphs": result}, indent=2))


if __name__ == "__main__":
    main()
