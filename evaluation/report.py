"""The evaluation's outputs: JSON for machines, a Markdown report and a recall@k chart (PNG)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evaluation.evaluation import Report
from evaluation.feedback_sim import ADVERSARIAL, ADVERSARIAL_LIMIT, Replays, breaches
from evaluation.languages import language_json, language_table
from evaluation.summary import ModeSummary, StageSummary

MODE_TITLES = {"bm25": "BM25 (alpha 0)", "vector": "vector (alpha 1)"}


def mode_title(report: Report, mode: str) -> str:
    if mode == "hybrid":
        return f"hybrid (alpha {report.settings.alpha:g})"
    if mode == "graded":
        return "graded + selected" + (" (heuristic grader)"
                                      if report.settings.grader == "heuristic" else "")
    return MODE_TITLES.get(mode, mode)


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _mode_json(m: ModeSummary) -> dict[str, Any]:
    data: dict[str, Any] = {f"recall@{k}": _r(v) for k, v in m.recall.items()}
    data.update({"mrr@10": _r(m.mrr), "ndcg@10": _r(m.ndcg)})
    data.update({f"doc_recall@{k}": _r(v) for k, v in m.doc_recall.items()})
    data.update({"precision": _r(m.precision), "chunks": _r(m.chunks, 2),
                 "documents": _r(m.documents, 2), "latency_p50_ms": _r(m.latency_p50_ms, 1),
                 "latency_p95_ms": _r(m.latency_p95_ms, 1)})
    if m.pool_recall is not None:
        data["pool_recall"] = _r(m.pool_recall)
    return data


def _stage_json(s: StageSummary) -> dict[str, Any]:
    return {"p50_ms": _r(s.p50_ms, 1), "p95_ms": _r(s.p95_ms, 1),
            "input_tokens": _r(s.input_tokens, 1), "output_tokens": _r(s.output_tokens, 1),
            "calls": _r(s.calls, 2)}


def to_json(report: Report) -> dict[str, Any]:
    """The stable machine form: `modes` keys are bm25, vector, hybrid, graded."""
    res, answers = report.results, report.results.answers
    return {
        "dataset": report.dataset, "path": report.path, "queries": report.queries,
        "evaluated": res.evaluated,
        "modes": {mode: _mode_json(m) for mode, m in res.modes.items()},
        "answers": None if answers is None else {
            "judge_model": answers.judge_model, "answered": answers.answered,
            "faithfulness": _r(answers.faithfulness), "accuracy": _r(answers.accuracy),
            "accuracy_counts": {str(k): v for k, v in answers.accuracy_counts.items()},
            "refusal_rate": _r(answers.refusal_rate), "errors": answers.errors,
            "judge_failures": answers.judge_failures,
            "grading_precision": _r(res.modes["graded"].precision)
            if "graded" in res.modes else None},
        "answers_skipped": report.note or None,
        "index_seconds": report.index.seconds,
        "index": asdict(report.index),
        "stages": {s.stage: _stage_json(s) for s in res.stages},
        "settings": asdict(report.settings),
        "per_query": [asdict(row) for row in res.rows],
        "feedback": [_replays_json(f) for f in report.feedback],
        "feedback_adversarial_bound_holds": not breaches(report.feedback)
        if report.feedback else None,
        "feedback_seconds": report.feedback_seconds,
        "languages": language_json(report.languages),
        "started_at": report.started_at, "seconds": report.seconds,
    }


def _replays_json(replays: Replays) -> dict[str, Any]:
    return {"voters": replays.voters, "mean_gain": _r(replays.mean_gain),
            "worst_gain": _r(replays.worst.gain), "worst_seed": replays.worst.seed,
            "runs": [{"seed": f.seed, "noise": f.noise, "votes": f.votes,
                      "ndcg_at_10": [_r(v) for v in f.ndcg], "gain": _r(f.gain)}
                     for f in replays.runs]}


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def retrieval_table(report: Report) -> list[str]:
    ks = report.settings.ks
    head = ["mode", *(f"recall@{k}" for k in ks), "MRR@10", "nDCG@10", "precision",
            "chunks", "docs", "p50 ms", "p95 ms"]
    rows = [[mode_title(report, mode), *(_f(m.recall[k]) for k in ks), _f(m.mrr), _f(m.ndcg),
             _f(m.precision), _f(m.chunks, 1), _f(m.documents, 1), _f(m.latency_p50_ms, 0),
             _f(m.latency_p95_ms, 0)] for mode, m in report.results.modes.items()]
    return _table(head, rows)


def _mode_section(report: Report, mode: str, m: ModeSummary) -> list[str]:
    rows = [[f"recall@{k}", _f(m.recall[k])] for k in report.settings.ks]
    if any(len(r.relevant) > 1 for r in report.results.rows):
        rows += [[f"document recall@{k} (share of all relevant documents)", _f(v)]
                 for k, v in m.doc_recall.items()]
    rows += [["MRR@10", _f(m.mrr)], ["nDCG@10", _f(m.ndcg)],
             ["precision (chunks passed on from relevant documents)", _f(m.precision)],
             ["chunks / distinct documents per question", f"{m.chunks:.1f} / {m.documents:.1f}"],
             ["latency p50 / p95 (ms)", f"{_f(m.latency_p50_ms, 0)} / {_f(m.latency_p95_ms, 0)}"]]
    if m.pool_recall is not None:
        rows.append(["recall of the whole candidate pool the grader saw", _f(m.pool_recall)])
    return [f"### {mode_title(report, mode)}", "", *_table(["metric", "value"], rows), ""]


def _answers(report: Report) -> list[str]:
    a = report.results.answers
    if a is None:
        return [report.note or "Answer metrics were not computed (graded mode not run).", ""]
    counts = a.accuracy_counts
    rows = [["faithfulness (answer sentences supported by the cited excerpts)",
             _f(a.faithfulness)],
            ["accuracy (mean of 2 correct / 1 partial / 0 wrong)", _f(a.accuracy, 2)],
            ["accuracy counts: 2 / 1 / 0 / −1 (appropriate refusal)",
             f"{counts[2]} / {counts[1]} / {counts[0]} / {counts[-1]}"],
            ["refusal rate", _f(a.refusal_rate)],
            ["grading precision (selected chunks from relevant documents)",
             _f(report.results.modes["graded"].precision)
             if "graded" in report.results.modes else "–"],
            ["answered / errors / judge failures", f"{a.answered} / {a.errors} / "
                                                    f"{a.judge_failures}"]]
    return [f"Judge: {a.judge_model}.", "", *_table(["metric", "value"], rows), ""]


def _stages(report: Report) -> list[str]:
    rows = [[mode_title(report, mode) + ": to the sources", _f(m.latency_p50_ms, 0),
             _f(m.latency_p95_ms, 0), "–", "–", "–"]
            for mode, m in report.results.modes.items()]
    rows += [[s.stage, _f(s.p50_ms, 0), _f(s.p95_ms, 0), _f(s.input_tokens, 0),
              _f(s.output_tokens, 0), _f(s.calls, 1)] for s in report.results.stages]
    head = ["stage", "p50 ms", "p95 ms", "input tokens", "output tokens", "LLM calls"]
    return [*_table(head, rows), "",
            "Tokens and calls are means per question; input tokens include cached ones.", ""]


def _index_line(report: Report) -> str:
    i = report.index
    if i.reused:
        built = f"; built earlier in {i.build_seconds:.0f} s" if i.build_seconds else ""
        return f"reused in {i.seconds:.1f} s{built}"
    if i.resumed:  # a rate over the whole index would count chunks embedded before
        return f"built in {i.seconds:.0f} s (resumed: {i.resumed} documents were already indexed)"
    rate = f", {i.chunks / i.build_seconds:.0f} chunks/s" if i.build_seconds else ""
    return f"built in {i.seconds:.0f} s{rate}"


def _header(report: Report) -> list[str]:
    s, i = report.settings, report.index
    mmr = f"on, balance {s.diversity_balance:g}" if s.diversity else "off"
    return [
        f"# Sift evaluation: {report.dataset}", "",
        f"- {report.queries} questions ({report.results.evaluated} with relevant documents), "
        f"run {report.started_at}, {report.seconds:.0f} s in all",
        f"- index `{i.collection}`: {i.documents} documents, {i.chunks} chunks, "
        f"{_index_line(report)}",
        f"- embedder {s.embedder} (backend {s.embedding_backend}); chunking {i.chunking or '–'}",
        f"- retrieval: at least {s.depth} chunks per question, deepened until they span "
        f"{max(s.ks)} documents (graded mode: {s.pipeline_limit} chunks); MMR diversity {mmr} "
        "for hybrid and graded, off for the bm25 and vector baselines",
        f"- grader {s.grader}; question rewrite {s.understand}; answers {s.answer_model}; "
        f"selection threshold {s.threshold:g}, at most {s.max_chunks} chunks, "
        f"{s.per_document} per document", ""]


DEFINITIONS = (
    "recall@k: share of questions with a relevant document among the first k distinct "
    "documents (chunks map to their document). MRR@10 and nDCG@10 (linear gains) over the "
    "same ranking; tied scores count as the mean over their orders. precision: share of the "
    "chunks a mode passes on (all candidates; for graded, the selected ones) that come from a "
    "relevant document. The graded mode ranks only the documents that reach the answer model.")


def _misses(report: Report) -> list[str]:
    top = max(report.settings.ks)
    missed = [r for r in report.results.rows if r.relevant and any(
        (hit is None or hit > top) for hit in r.first_hit.values())]
    if not missed:
        return []
    modes = list(report.results.modes)
    rows = [[r.query_id, r.text[:80].replace("|", "/"),
             *("–" if r.first_hit.get(m) is None else str(r.first_hit[m]) for m in modes)]
            for r in missed[:40]]
    return [f"## Questions some mode missed (rank of the first relevant document; – = not "
            f"in the top {top})", "", *_table(["id", "question", *modes], rows), ""]


def to_markdown(report: Report, chart: str | None = None) -> str:
    lines = _header(report)
    lines += ["## Retrieval (document level)", "", *retrieval_table(report), "", DEFINITIONS, ""]
    if chart:
        lines += [f"![recall@k per mode]({chart})", ""]
    lines += ["## Answers", "", *_answers(report)]
    lines += ["## Cost and speed per question", "", *_stages(report)]
    lines += ["## Per mode", ""]
    for mode, m in report.results.modes.items():
        lines += _mode_section(report, mode, m)
    lines += _misses(report)
    if report.feedback:
        lines += ["## Simulated feedback (learned document prior)", "",
                  *feedback_table(report.feedback, report.feedback_seconds)]
    if report.languages:
        lines += ["", "## Other languages", "", *language_table(report.languages,
                                                                 report.settings.ks)]
    return "\n".join(lines).rstrip() + "\n"


def feedback_table(feedback: Sequence[Replays], seconds: float) -> list[str]:
    """nDCG@10 of the graded mode before and after the replayed votes, per kind of voter: the
    mean over the seeds and the worst seed."""
    rows = []
    for f in feedback:
        first, worst = f.runs[0], f.worst
        after = sum(r.ndcg[-1] for r in f.runs) / len(f.runs)
        rows.append([f.voters, f"{first.noise:g}" if f.voters == "honest" else "-",
                     str(round(sum(r.votes for r in f.runs) / len(f.runs))),
                     f"{first.ndcg[0]:.3f}", f"{after:.3f}", f"{f.mean_gain * 100:+.1f}",
                     f"{worst.gain * 100:+.1f} (seed {worst.seed})"])
    runs = feedback[0].runs if feedback else ()
    rounds = len(runs[0].ndcg) - 1 if runs else 0
    return [f"{rounds} replays of every question, repeated with {len(runs)} seeds "
            f"({', '.join(str(r.seed) for r in runs)}) per kind of voter "
            f"({seconds:.0f} s in all); honest votes follow the qrels (flipped "
            "with the noise probability); random and inverted voters are everyone; one-account "
            "adds one account voting against the qrels on every answer. Points are the mean "
            "gain over the seeds; one seed's draw can move it by a question's worth.", "",
            *_table(["voters", "noise", "votes", "nDCG@10 before", "after (mean)",
                     "points (mean)", "worst seed"], rows), "", _bound(feedback), ""]


def _bound(replays: Sequence[Replays]) -> str:
    limit = f"{ADVERSARIAL_LIMIT * 100:g} point"
    rule = (f"Adversarial bound ({' and '.join(ADVERSARIAL)} votes lower nDCG@10 by at most "
            f"{limit}, judged on the mean over the seeds): ")
    failed = breaches(replays)
    if not failed:
        return rule + "holds."
    return rule + "does NOT hold (" + ", ".join(
        f"{f.voters} {f.mean_gain * 100:+.1f}" for f in failed) + ")."


def write_chart(report: Report, path: Path) -> None:
    """recall@k curves, one per mode (needs matplotlib: the `eval` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for mode, m in report.results.modes.items():
        ax.plot(range(1, len(m.curve) + 1), m.curve, marker=".", label=mode_title(report, mode))
    ax.set(xlabel="k (distinct documents)", ylabel="recall@k", ylim=(0, 1.02),
           title=f"{report.dataset}: recall@k per mode ({report.results.evaluated} questions)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
