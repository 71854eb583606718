"""The feedback replay: honest votes lift nDCG@10; random votes and one lying account do not
sink it; everyone lying is bounded by the prior's limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.evaluate import evaluation
from bot.evaluate.dataset import EvalQuery
from bot.evaluate.feedback_sim import SimOptions, SimQuestion, SimResult, simulate
from bot.evaluate.runner import QueryResult
from bot.settings import Settings
from rag.config import SelectionConfig
from rag.prior import PriorConfig
from rag.types import Answer, AnswerStatus, Candidate, Grade, GradeSource, Question
from tests.rag.builders import chunk

SELECTION = SelectionConfig(threshold=0.5, max_chunks=10, per_document=1, floor=5,
                            floor_min=0.0, relative=0.0, retrieval_weight=1.0)


def question(n: int) -> SimQuestion:
    """A popular page that answers nothing ranks first for every question; the answer is 2nd."""
    docs = ["popular", f"answer{n}", f"other{n}"]
    candidates = tuple(Candidate(rank, chunk(d, d, "t"), 1.0 - rank / 10,
                                 Grade(0.6, "r", GradeSource.HEURISTIC))
                       for rank, d in enumerate(docs, start=1))
    return SimQuestion({f"answer{n}": 1.0}, candidates)


QUESTIONS = [question(n) for n in range(12)]


def run(voters: str, noise: float = 0.1) -> SimResult:
    return simulate(QUESTIONS, SimOptions(rounds=6, noise=noise, voters=voters, cite=1),
                    SELECTION)


def test_honest_votes_demote_the_page_that_answers_nothing() -> None:
    result = run("honest")
    assert result.ndcg[0] == pytest.approx(1 / 1.584962500721156)  # the answer at rank 2
    assert result.ndcg[-1] == pytest.approx(1.0) and result.gain > 0.3
    assert result.votes == 6 * len(QUESTIONS) and len(result.ndcg) == 7


def test_one_lying_account_changes_nothing_honest_voters_decide() -> None:
    assert run("one-account").ndcg[-1] == pytest.approx(run("honest").ndcg[-1])


@pytest.mark.parametrize("voters", ["random", "inverted"])
def test_adversarial_votes_cannot_bury_what_ranks_first(voters: str) -> None:
    # Lies would push "popular" further up, but it is first already: nothing is lost.
    assert run(voters).ndcg[-1] >= run(voters).ndcg[0] - 0.01


def test_pure_noise_learns_nothing_useful() -> None:
    assert run("honest", noise=0.5).gain < run("honest").gain


def test_the_eval_replays_with_the_configured_prior(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`[prior]` settings reach the simulation: one evaluates the bounds one would deploy."""
    app = App(Settings(data_dir=tmp_path, prior={"low": 0.9, "high": 1.1}))
    assert (app.prior_config.low, app.prior_config.high) == (0.9, 1.1)
    seen: list[PriorConfig | None] = []

    def spy(questions: object, options: object, selection: object,
            prior: PriorConfig | None = None, regrade: object = None) -> SimResult:
        seen.append(prior)
        return SimResult(voters="honest", noise=0.0, ndcg=[0.0], votes=0)

    monkeypatch.setattr(evaluation, "simulate", spy)
    question = EvalQuery("q1", "how?", relevant={"answer0": 1.0})
    answer = Answer("a", AnswerStatus.ANSWERED, Question("how?"),
                    candidates=QUESTIONS[0].candidates)
    evaluation._simulations(app, [QueryResult(question, {}, answer)],
                            evaluation.Options(simulate_feedback=2))
    assert seen and all(p == app.prior_config for p in seen)
