"""The embedding model on OpenVINO (bfloat16 where the CPU has it; float32; int8) and ONNX Runtime.

Run:  .venv/bin/python -m bench.embed_runtimes [--chunks 400] [--rounds 2] [--queries 200]
                                               [--json out.json]

Embeds a seeded sample of the AWS pages' chunks (as the sync job makes them) with Sift's graph
on ONNX Runtime in float32 (`onnx`), on OpenVINO as Sift runs it (`openvino`, the default:
bfloat16 products where the CPU has them), on OpenVINO held to float32, and Sift's static int8
graph on OpenVINO (`openvino-int8`, built in the scratch directory). Reports each one's
cosine to ONNX Runtime's vectors (min, 1st percentile, mean), texts/s and process CPU seconds
with ratios, alternating the runtimes so a busy machine slows them alike; then the latency of
one question's embedding on one thread (what `sift serve` does per question), p50 and p95.
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
from rag.embed import _graph_dir, _model_path, _runner
from rag.onnx_minilm import OnnxMiniLM

BATCH = 32
Runner = Callable[[list[str]], np.ndarray]
QUESTION = "How do I rotate the access keys of an IAM user without downtime?"


def models(scratch: Path, threads: int) -> dict[str, OnnxMiniLM]:
    onnx = _runner(scratch, _model_path(), 256, graph="onnx", threads=threads,
                   runtime="onnxruntime")  # builds the graph the other two read
    graph = _graph_dir(scratch, "onnx") / "model.onnx"
    tokenizer = _model_path() / "tokenizer.json"
    return {"fp32 (onnx)": onnx,
            "openvino (default)": OnnxMiniLM(graph, tokenizer, 256, threads),
            "openvino held to f32": OnnxMiniLM(graph, tokenizer, 256, threads,
                                               precision="f32"),
            "openvino-int8": _runner(scratch, _model_path(), 256, graph="openvino-int8",
                                     threads=threads, runtime="openvino")}


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


def encoder(model: OnnxMiniLM) -> Runner:
    return lambda texts: model.encode(texts, BATCH)


def query_latency(named: dict[str, OnnxMiniLM], queries: int) -> dict[str, dict[str, float]]:
    out = {}
    for name, model in named.items():
        model.encode([QUESTION], 1)
        times = []
        for _ in range(queries):
            started = time.perf_counter()
            model.encode([QUESTION], 1)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        out[name] = {"p50_ms": round(times[len(times) // 2], 2),
                     "p95_ms": round(times[int(len(times) * 0.95)], 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--chunks", type=int, default=400, help="how many chunks to embed")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes per runtime")
    parser.add_argument("--queries", type=int, default=200, help="single questions timed")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    texts = sample_chunks(args.corpus, args.chunks, args.seed)
    with tempfile.TemporaryDirectory(prefix="sift-bench-runtimes-") as scratch:
        every_core = models(Path(scratch), 0)
        runners: dict[str, Runner] = {name: encoder(model) for name, model in every_core.items()}
        result = measure(texts, runners, args.rounds)
        latency = query_latency(models(Path(scratch), 1), args.queries)
    precision = every_core["openvino (default)"].runtime.precision
    print(f"{len(texts)} chunks of the dev corpus, {args.rounds} timed passes each; "
          f"the default runs in {precision} on this CPU")
    for name, row in result.items():
        print(f"{name:22s} cosine to onnx min {row['cosine_min']:.5f}  p1 {row['cosine_p1']:.5f}"
              f"  mean {row['cosine_mean']:.5f}  {row['texts_per_s']:6.1f} texts/s "
              f"({row['speed_vs_fp32']:.2f}x)  CPU {row['cpu_s']:.1f} s "
              f"(onnx / this: {row['cpu_vs_fp32']:.2f})")
    for name, row in latency.items():
        print(f"{name:22s} one question on one thread: p50 {row['p50_ms']:.2f} ms, "
              f"p95 {row['p95_ms']:.2f} ms")
    if args.json:
        args.json.write_text(json.dumps({"chunks": len(texts), "rounds": args.rounds,
                                         "default_precision": precision, "runtimes": result,
                                         "question_latency": latency}, indent=2))


if __name__ == "__main__":
    main()
