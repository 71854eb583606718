"""Evaluation sets: a BEIR directory (corpus, queries, qrels) or a YAML/JSONL list of questions."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag.errors import InputError

EVAL_FILE_SUFFIXES = (".yaml", ".yml", ".jsonl")


@dataclass(frozen=True)
class CorpusDoc:
    doc_id: str
    title: str
    text: str
    url: str = ""


@dataclass(frozen=True)
class EvalQuery:
    """One question; `relevant` maps the documents that answer it to their gain (> 0)."""

    query_id: str
    text: str
    answer: str = ""
    relevant: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalSet:
    """Questions, and the corpus to index for them (None: ask the synced sources instead)."""

    name: str
    path: Path
    queries: tuple[EvalQuery, ...]
    corpus: tuple[CorpusDoc, ...] | None = None

    def limited(self, n: int | None) -> EvalSet:
        """The first n questions (the corpus stays whole so that the index is shared)."""
        if not n:
            return self
        return EvalSet(self.name, self.path, self.queries[:n], self.corpus)


def _bad(path: Path, detail: str) -> InputError:
    return InputError(f"{path}: {detail}", user_message=f"Cannot read the evaluation set "
                      f"{path}: {detail}.")


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise _bad(path, f"line {number} is not JSON ({exc})") from exc
            if not isinstance(item, dict):
                raise _bad(path, f"line {number} is not a JSON object")
            yield item


def _qrels_file(root: Path) -> Path:
    for candidate in (root / "qrels.tsv", root / "qrels" / "test.tsv"):
        if candidate.is_file():
            return candidate
    found = sorted((root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
    if len(found) == 1:
        return found[0]
    raise _bad(root, "no qrels.tsv (or qrels/test.tsv) next to corpus.jsonl")


def read_qrels(path: Path) -> dict[str, dict[str, float]]:
    """query id -> {document id: score} for the scores above 0 (a header line is optional)."""
    qrels: dict[str, dict[str, float]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or (number == 1 and row[0].strip().lower() in ("query-id", "query_id")):
                continue
            if len(row) < 3:
                raise _bad(path, f"line {number} does not have three tab-separated columns")
            try:
                score = float(row[2])
            except ValueError as exc:
                raise _bad(path, f"line {number}: score {row[2]!r} is not a number") from exc
            if score > 0:
                qrels.setdefault(row[0].strip(), {})[row[1].strip()] = score
    return qrels


def _with_ids(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        raise _bad(path.parent, f"{path.name} is missing")
    for number, item in enumerate(_jsonl(path), start=1):
        if not str(item.get("_id") or "").strip():
            raise _bad(path, f"entry {number} has no `_id`")
        yield item


def load_beir(root: Path) -> EvalSet:
    """corpus.jsonl (_id, title, text), queries.jsonl (_id, text, answer?) and qrels."""
    qrels = read_qrels(_qrels_file(root))
    corpus = tuple(CorpusDoc(str(d["_id"]), str(d.get("title") or ""), str(d.get("text") or ""),
                             str(d.get("url") or ""))
                   for d in _with_ids(root / "corpus.jsonl"))
    queries = []
    for item in _with_ids(root / "queries.jsonl"):
        query_id = str(item["_id"])
        if query_id in qrels:  # as in BEIR, a question without judgements is not evaluated
            queries.append(EvalQuery(query_id, str(item.get("text", "")),
                                     str(item.get("answer") or ""), qrels[query_id]))
    if not queries:
        raise _bad(root, "no question in queries.jsonl has a line in the qrels")
    return EvalSet(slug(root.name), root, tuple(queries), corpus)


def _items(path: Path) -> list[Any]:
    if path.suffix == ".jsonl":
        return list(_jsonl(path))
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise _bad(path, f"invalid YAML ({exc})") from exc
    if isinstance(data, dict):
        data = data.get("questions")
    if not isinstance(data, list):
        raise _bad(path, "expected a list of questions (or a `questions:` list)")
    return data


def _question(path: Path, number: int, item: Any) -> EvalQuery:
    if not isinstance(item, dict) or not str(item.get("question") or "").strip():
        raise _bad(path, f"question {number} has no `question`")
    ids = item.get("expected_doc_ids") or []
    if isinstance(ids, str):
        ids = [ids]
    return EvalQuery(str(item.get("id") or f"q{number}"), str(item["question"]).strip(),
                     str(item.get("expected_answer") or "").strip(),
                     {str(d): 1.0 for d in ids})


def load_questions(path: Path) -> EvalSet:
    """{question, expected_answer, expected_doc_ids} items, asked of the synced sources."""
    queries = tuple(_question(path, n, item) for n, item in enumerate(_items(path), start=1))
    if not queries:
        raise _bad(path, "it holds no questions")
    return EvalSet(slug(path.stem), path, queries, None)


def load(path: Path) -> EvalSet:
    """A BEIR directory, a YAML/JSONL question file, or a directory holding one such file."""
    if path.is_file() and path.suffix in EVAL_FILE_SUFFIXES:
        return load_questions(path)
    if not path.is_dir():
        raise _bad(path, "not a directory with corpus.jsonl, nor a .yaml/.jsonl question file")
    if (path / "corpus.jsonl").is_file():
        return load_beir(path)
    files = [p for p in sorted(path.iterdir()) if p.suffix in EVAL_FILE_SUFFIXES]
    if len(files) == 1:
        return load_questions(files[0])
    raise _bad(path, "expected corpus.jsonl + queries.jsonl + qrels.tsv, or one question file")


def slug(name: str) -> str:
    """A name usable inside a Weaviate collection name and a directory name."""
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
    return cleaned or "dataset"


def corpus_hash(corpus: tuple[CorpusDoc, ...]) -> str:
    """A digest of every document's id, title, text and url, independent of file order."""
    digest = hashlib.sha256()
    for doc in sorted(corpus, key=lambda d: d.doc_id):
        for part in (doc.doc_id, doc.title, doc.text, doc.url):
            digest.update(part.encode("utf-8"))
            digest.update(b"\x00")
    return digest.hexdigest()
