"""Loading evaluation sets: BEIR directories and YAML/JSONL question files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.dataset import corpus_hash, load, read_qrels, slug
from rag.errors import InputError
from tests.evaluation.tiny import DOCS, QUERIES, write_beir


def test_beir_directory(tmp_path: Path) -> None:
    data = load(write_beir(tmp_path / "Tiny Set"))
    assert data.name == "tiny_set" and data.corpus is not None
    assert [d.doc_id for d in data.corpus] == list(DOCS)
    assert [q.query_id for q in data.queries] == [q[0] for q in QUERIES]
    q6 = data.queries[-1]
    assert q6.answer == "Sixteen weeks." and dict(q6.relevant) == {"d08": 2.0, "d01": 1.0}
    assert [q.query_id for q in data.limited(2).queries] == ["q1", "q2"]
    assert data.limited(2).corpus == data.corpus


def test_qrels_without_header_in_a_qrels_folder_skip_zero_scores(tmp_path: Path) -> None:
    root = write_beir(tmp_path / "set")
    (root / "qrels.tsv").unlink()
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("q1\td01\t1\nq1\td02\t0\nq3\td03\t2\n")
    data = load(root)
    assert [q.query_id for q in data.queries] == ["q1", "q3"]  # the others have no judgements
    assert dict(data.queries[0].relevant) == {"d01": 1.0}
    assert read_qrels(root / "qrels" / "test.tsv")["q3"] == {"d03": 2.0}


@pytest.mark.parametrize("suffix", [".yaml", ".jsonl"])
def test_question_file(tmp_path: Path, suffix: str) -> None:
    items = [{"question": "How do I rotate keys?", "expected_answer": "Run zk rotate.",
              "expected_doc_ids": ["runbooks/keys.md"]},
             {"id": "none", "question": "What is the airspeed of a swallow?"}]
    path = tmp_path / f"Team Questions{suffix}"
    if suffix == ".yaml":
        import yaml
        path.write_text(yaml.safe_dump({"questions": items}))
    else:
        path.write_text("\n".join(json.dumps(i) for i in items) + "\n")
    for source in (path, tmp_path):  # the file itself, or the directory holding it
        data = load(source)
        assert data.name == "team_questions" and data.corpus is None
        first, second = data.queries
        assert (first.query_id, first.answer, dict(first.relevant)) == (
            "q1", "Run zk rotate.", {"runbooks/keys.md": 1.0})
        assert (second.query_id, second.answer, dict(second.relevant)) == ("none", "", {})


@pytest.mark.parametrize(("files", "message"), [
    ({}, "expected corpus.jsonl"),
    ({"corpus.jsonl": "{}\n", "queries.jsonl": "{}\n"}, "no qrels.tsv"),
    ({"corpus.jsonl": "not json\n", "qrels.tsv": "q\td\t1\n"}, "line 1 is not JSON"),
    ({"corpus.jsonl": "{}\n", "qrels.tsv": "q\td\t1\n"}, "entry 1 has no `_id`"),
    ({"corpus.jsonl": "{\"_id\": \"d\"}\n", "qrels.tsv": "q\td\t1\n"}, "queries.jsonl is missing"),
    ({"set.yaml": "- answer: no question\n"}, "question 1 has no `question`"),
    ({"set.yaml": "questions: 3\n"}, "expected a list of questions"),
])
def test_unreadable_sets_say_why(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=message) as raised:
        load(tmp_path)
    assert message in raised.value.user_message


def test_slug_and_corpus_hash(tmp_path: Path) -> None:
    assert slug("aws-docs") == "aws_docs" and slug("../") == "dataset"
    data = load(write_beir(tmp_path / "a"))
    assert data.corpus is not None
    digest = corpus_hash(data.corpus)
    assert corpus_hash(tuple(reversed(data.corpus))) == digest  # file order does not matter
    changed = (data.corpus[0].__class__(data.corpus[0].doc_id, "New title",
                                        data.corpus[0].text), *data.corpus[1:])
    assert corpus_hash(changed) != digest
