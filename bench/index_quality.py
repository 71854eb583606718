"""Retrieval quality of each embedding backend over several builds of the AWS dev index.

Run:  .venv/bin/python -m bench.index_quality [--builds 3] [--backends openvino,openvino-int8]
                                               [--workdir /tmp/sift-bench-quality] [--json F]

`sift eval` on the 2,757 AWS pages and 40 questions, its index rebuilt `--builds` times per
backend in a throwaway Weaviate. Each backend's chunks are embedded once and kept under the
work directory, so every other build, and later runs of this script, cost only the Weaviate
import. Reports nDCG@10 per build and mode (bm25, vector, hybrid, graded with the heuristic
grader), and per backend each mode's mean and range over the imported builds with the gap to
the first backend's. Then the first backend again with seeded random noise on each
question's vector (`--jitter-builds`, cosine `--jitter-cosine` to the true one): on 40
questions one question's rank can flip for a change that small, and the range these builds
span is what the figures can resolve. Last, each backend's gap to the first question by
question, with a 95% bootstrap interval over the questions (how far forty questions can pin
a gap down) and how many questions moved up and down.

Why builds are compared only when imported alike: Weaviate's BM25 ranking depends on how the
chunks were written, not only on what was written. Identical chunks written as fast as an
import goes, or trickled in at embedding speed over minutes (other segments on disk), rank
differently, and the difference stays (on this set, BM25 nDCG@10 0.545 to 0.592 for one
corpus). A build that embeds writes at embedding speed, so it is listed but left out of the
comparison; imported builds write alike whatever the backend, so their gap is the vectors'.

A backend may name a chunk overlap too, `openvino-int8@overlap=0` (SIFT_SYNC__OVERLAP_TOKENS;
unset, the sync's default): `--backends openvino-int8,openvino-int8@overlap=0` compares
chunkings on one model, whose vectors of the chunks both share are embedded once. And the
vector index's compression (SIFT_WEAVIATE__COMPRESSION): `--backends
openvino-int8,openvino-int8@compression=rq8` compares the compressed index with the
uncompressed one on the same vectors.
`--against F` compares with an earlier run's `--json F` instead (its builds become the
reference, shown as was:BACKEND): a change to the code, such as what the model reads of a
chunk, measured before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from statistics import mean

import numpy as np
from pydantic import SecretStr

from bot.app import App
from bot.settings import EmbeddingSettings, Settings, SyncSettings, WeaviateSettings
from evaluation.dataset import EvalSet, load
from evaluation.evaluation import Options, evaluate
from evaluation.runner import MODES
from rag.embed import Embedder, LocalEmbedder
from rag.index_schema import COMPRESSIONS
from rag.types import Vector
from weaviate_server.install import find_binary
from weaviate_server.process import ManagedWeaviate, free_ports

DATASET = Path(__file__).resolve().parents[2] / "shared" / "eval" / "aws-docs"


class KeptVectors:
    """An embedder that embeds each distinct text once and keeps its vector on disk."""

    def __init__(self, inner: Embedder, store: Path) -> None:
        self._inner = inner
        self._store = store
        self._vectors: dict[str, np.ndarray] = {}
        if store.is_file():
            with np.load(store) as kept:
                self._vectors = dict(zip(kept["keys"].tolist(), kept["vectors"], strict=True))
        self.name, self.dimension = inner.name, inner.dimension
        self.embedded = 0  # texts this process sent to the model
        self.jitter = 0.0  # std of the seeded noise added to each query vector's components
        self.seed = 0

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        keys = [self._key(t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True)
                          if k not in self._vectors}.items())
        if missing:
            fresh = await self._inner.embed_documents([t for _, t in missing])
            self.embedded += len(missing)
            for (key, _), vector in zip(missing, fresh, strict=True):
                self._vectors[key] = np.asarray(vector, dtype=np.float32)
        return [self._vectors[k].tolist() for k in keys]

    async def embed_query(self, text: str) -> Vector:
        vector = await self._inner.embed_query(text)
        if not self.jitter:
            return vector
        digest = int(self._key(text)[:8], 16)
        noisy = np.asarray(vector) + np.random.default_rng([self.seed, digest]).normal(
            0.0, self.jitter, len(vector))
        return (noisy / np.linalg.norm(noisy)).tolist()

    def save(self) -> None:
        keys = sorted(self._vectors)
        np.savez(self._store, keys=np.array(keys),
                 vectors=np.stack([self._vectors[k] for k in keys]))


class BenchApp(App):
    """An App whose embedder keeps its vectors between builds."""

    def __init__(self, settings: Settings, embedder: KeptVectors) -> None:
        super().__init__(settings)
        self._kept = embedder

    @cached_property
    def embedder(self) -> Embedder:
        return self._kept


@dataclass
class Build:
    backend: str
    number: int
    seconds: float
    embedded: int  # texts sent to the model: written at embedding speed when not 0
    ndcg: dict[str, float] = field(default_factory=dict)
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)  # mode -> id -> nDCG


def variant(label: str) -> tuple[str, dict[str, str]]:
    """`backend`, then any of `@overlap=N` (the chunk overlap) and `@compression=rq8` (the
    vector index's compression): the embedding backend and the options named."""
    backend, *options = label.split("@")
    named: dict[str, str] = {}
    for option in options:
        name, _, value = option.partition("=")
        if not ((name == "overlap" and value.isdigit()) or
                (name == "compression" and value in COMPRESSIONS)):
            raise SystemExit(f"{label!r}: a backend takes @overlap=N (a whole number) and "
                             f"@compression= one of {', '.join(COMPRESSIONS)}")
        named[name] = value
    return backend, named


def settings(workdir: Path, server: ManagedWeaviate, label: str) -> Settings:
    backend, named = variant(label)
    overlap = int(named["overlap"]) if "overlap" in named else None
    return Settings(
        data_dir=workdir / "data", database_url=f"sqlite:///{workdir / 'sift.db'}",
        weaviate_url=server.url, weaviate_api_key=SecretStr(server.api_key),
        weaviate=WeaviateSettings(grpc_url=f"127.0.0.1:{server.ports.grpc}",
                                  insert_timeout_s=300,
                                  compression=named.get("compression", "none")),
        embedding=EmbeddingSettings(backend=backend),
        sync=SyncSettings(sync_on_start=False, overlap_tokens=overlap),
        anthropic_api_key=None)


def jitter_for(cosine: float, dimension: int) -> float:
    """The noise std that leaves a unit vector at about `cosine` to itself (1 - d s^2 / 2)."""
    return float(np.sqrt(2 * (1 - cosine) / dimension))


async def one_backend(workdir: Path, server: ManagedWeaviate, backend: str,
                      builds: int, dataset_dir: Path, jitter: tuple[int, float] = (0, 1.0)
                      ) -> list[Build]:
    """`builds` imported builds, after one that embeds when the vectors are not kept yet;
    then `jitter[0]` more whose query vectors carry seeded noise of cosine `jitter[1]`."""
    base = settings(workdir, server, backend)
    e = base.embedding
    kept = KeptVectors(LocalEmbedder(batch_size=e.batch_size, max_seq_length=e.max_seq_length,
                                     backend=e.backend, threads=e.threads),
                       workdir / f"vectors-{e.backend}.npz")  # shared by its chunkings
    dataset = load(dataset_dir)
    # A build that had to embed wrote at embedding speed: listed, then planned again.
    plan = [backend] * builds + [f"{backend}~q"] * jitter[0]
    done: list[Build] = []
    while plan:
        number = len(done) + 1
        if plan[0] != backend:
            kept.jitter, kept.seed = jitter_for(jitter[1], kept.dimension), number
        done.append(await build_once(BenchApp(base, kept), dataset, kept, plan[0], number))
        if not done[-1].embedded:
            plan.pop(0)
    return done


async def build_once(app: BenchApp, dataset: EvalSet, kept: KeptVectors, label: str,
                     number: int) -> Build:
    before = kept.embedded
    try:
        report = await evaluate(app.evaluation_harness(), dataset,
                                Options(rebuild=True, modes=MODES))
    finally:
        await app.aclose()
    if kept.embedded > before:
        kept.save()
    rows = [row for row in report.results.rows if row.relevant]
    build = Build(label, number, report.index.build_seconds or 0.0, kept.embedded - before,
                  {mode: report.results.modes[mode].ndcg for mode in MODES},
                  {mode: {row.query_id: row.ndcg[mode] for row in rows} for mode in MODES})
    how = f"embedded {build.embedded} texts" if build.embedded else "imported"
    print(f"{label:12s} build {number}: " + "  ".join(
        f"{m} {v:.3f}" for m, v in build.ndcg.items()) +
          f"  ({build.seconds:.0f} s, {how})", flush=True)
    return build


def earlier_builds(path: Path) -> list[Build]:
    """The builds an earlier run wrote with --json, labelled was:BACKEND (noisy ones left out)."""
    rows = json.loads(path.read_text())["builds"]
    return [Build(**{**row, "backend": f"was:{row['backend']}"}) for row in rows
            if "~" not in row["backend"]]


def summary(builds: list[Build]) -> dict[str, dict[str, dict[str, float]]]:
    """Per backend and mode: mean, lowest and highest nDCG@10 over the imported builds."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for backend in dict.fromkeys(b.backend for b in builds):
        mine = [b for b in builds if b.backend == backend and not b.embedded]
        out[backend] = {mode: {"mean": round(mean(b.ndcg[mode] for b in mine), 4),
                               "min": round(min(b.ndcg[mode] for b in mine), 4),
                               "max": round(max(b.ndcg[mode] for b in mine), 4)}
                        for mode in MODES}
    return out


def paired(builds: list[Build], resamples: int = 10_000, seed: int = 18
           ) -> dict[str, dict[str, dict[str, float]]]:
    """Per backend after the first and mode, question by question against the first backend
    (each question's nDCG@10 averaged over a backend's imported builds): the mean gap in points,
    a 95% bootstrap interval of it over the questions, and how many questions moved up or down.
    The interval is what the question set can resolve: a bound tighter than it is not shown."""
    imported = [b for b in builds if not b.embedded and "~" not in b.backend]
    backends = list(dict.fromkeys(b.backend for b in imported))
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, dict[str, float]]] = {}

    def per_question(backend: str, mode: str) -> dict[str, float]:
        mine = [b.per_question[mode] for b in imported if b.backend == backend]
        return {q: mean(p[q] for p in mine) for q in mine[0]}

    for backend in backends[1:]:
        out[backend] = {}
        for mode in MODES:
            first, other = per_question(backends[0], mode), per_question(backend, mode)
            gaps = 100 * np.array([other[q] - first[q] for q in sorted(first)])
            means = gaps[rng.integers(0, len(gaps), (resamples, len(gaps)))].mean(axis=1)
            low, high = np.percentile(means, [2.5, 97.5])
            out[backend][mode] = {"gap": round(float(gaps.mean()), 2),
                                  "low": round(float(low), 2), "high": round(float(high), 2),
                                  "up": int((gaps > 1e-6).sum()),
                                  "down": int((gaps < -1e-6).sum()), "questions": len(gaps)}
    return out


def print_paired(table: dict[str, dict[str, dict[str, float]]], first: str) -> None:
    print(f"\nQuestion by question against {first} (nDCG@10 points; 95% bootstrap interval; "
          "questions up / down)")
    for backend, modes in table.items():
        print(f"{backend:12s} " + "  ".join(
            f"{mode} {g['gap']:+.1f} [{g['low']:+.1f}, {g['high']:+.1f}] "
            f"{g['up']}/{g['down']}" for mode, g in modes.items()))


def print_summary(table: dict[str, dict[str, dict[str, float]]]) -> None:
    first = next(iter(table))
    print("\nnDCG@10 of the imported builds, mean [lowest-highest]; the gap is in points")
    for backend, modes in table.items():
        cells = []
        for mode, s in modes.items():
            gap = 100 * (s["mean"] - table[first][mode]["mean"])
            versus = "" if backend == first else f" ({gap:+.1f})"
            cells.append(f"{mode} {s['mean']:.3f} [{s['min']:.3f}-{s['max']:.3f}]{versus}")
        print(f"{backend:12s} " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=3,
                        help="imported builds per backend (plus one that embeds, if needed)")
    parser.add_argument("--backends", default="openvino,openvino-int8",
                        help="comma-separated; the first is the reference; BACKEND@overlap=N "
                        "also sets the chunk overlap")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sift-bench-quality"),
                        help="throwaway Weaviate data and the kept vectors (reused next run)")
    parser.add_argument("--jitter-builds", type=int, default=4,
                        help="builds of the first backend whose query vectors carry seeded "
                        "random noise (shown as <backend>~q): how far the figures move for a "
                        "change of the vectors too small to mean anything")
    parser.add_argument("--jitter-cosine", type=float, default=0.99998,
                        help="each noisy query vector's cosine to its own (default: about "
                        "what bfloat16 products change)")
    parser.add_argument("--dataset", type=Path, default=DATASET, help="a BEIR-style directory")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--against", type=Path,
                        help="an earlier run's --json file: its builds are the reference")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    args.workdir.mkdir(parents=True, exist_ok=True)
    binary = find_binary(WeaviateSettings().version, None)
    if binary is None:
        raise SystemExit("no Weaviate binary: run `sift weaviate install` first")
    server = ManagedWeaviate(binary, args.workdir / "weaviate", free_ports())
    server.start(timeout_s=120)
    builds = earlier_builds(args.against) if args.against else []
    try:
        for n, backend in enumerate(args.backends.split(",")):
            jitter = (args.jitter_builds if n == 0 else 0, args.jitter_cosine)
            builds += asyncio.run(one_backend(args.workdir, server, backend, args.builds,
                                              args.dataset, jitter))
    finally:
        server.stop()
    table = summary(builds)
    print_summary(table)
    gaps = paired(builds)
    print_paired(gaps, builds[0].backend)
    if args.json:
        args.json.write_text(json.dumps({"builds": [vars(b) for b in builds],
                                         "summary": table, "paired": gaps}, indent=2))


if __name__ == "__main__":
    main()
