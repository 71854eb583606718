"""`sift ask` (one question) and `sift chat` (a conversation with follow-ups and votes)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
from collections.abc import Awaitable, Callable

from bot.app import App, load_settings
from bot.render.json import answer_to_dict
from bot.render.terminal import render_answer, render_explain
from bot.runtime import connected_index
from rag import messages
from rag.errors import InputError
from rag.pipeline import Pipeline
from rag.types import Answer, AnswerStatus, AskContext, Mode, Platform, Question, Turn


def register(sub: argparse._SubParsersAction) -> None:
    ask = sub.add_parser(
        "ask", help="ask one question and print the answer with its sources",
        description="Answer one question from the knowledge base. Without an Anthropic API "
        "key Sift runs in fast mode: heuristic grading and quoted excerpts.")
    ask.add_argument("question", help="the question, in quotes")
    _common(ask)
    ask.add_argument("--json", action="store_true",
                     help="print the whole answer as one JSON object")
    ask.add_argument("--explain", action="store_true",
                     help="also list every candidate with its score and the grader's reason")
    ask.set_defaults(handler=_ask)
    chat = sub.add_parser(
        "chat", help="a terminal conversation with follow-ups; + or - votes on the last answer",
        description="Talk to Sift in the terminal. Follow-up questions use the conversation. "
        "Type + or - to vote on the last answer, 'exit' or Ctrl-D to leave.")
    _common(chat)
    chat.set_defaults(handler=_chat)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=[m.value for m in Mode],
                        help="accurate: Claude grades every candidate; fast: heuristic grading "
                        "(default: accurate when an API key is set)")
    parser.add_argument("--groups", metavar="G1,G2",
                        help="answer as a member of these access groups (default: all content)")


def _question(text: str, args: argparse.Namespace, history: tuple[Turn, ...] = ()) -> Question:
    if not text.strip():
        raise InputError("empty question", user_message=messages.EMPTY_QUESTION)
    groups = tuple(g.strip() for g in (args.groups or "").split(",") if g.strip())
    context = AskContext(platform=Platform.TERMINAL, user=getpass.getuser(),
                         access_groups=groups)
    return Question(text.strip(), context, history, Mode(args.mode) if args.mode else None)


async def _with_pipeline(args: argparse.Namespace, announce: bool,
                         work: Callable[[App, Pipeline], Awaitable[int]]) -> int:
    app = App(load_settings(args.config))
    await asyncio.to_thread(app.database.upgrade)
    try:
        async with connected_index(app, announce=announce) as index:
            pipeline = app.pipeline(index, recorder=app.interactions, cache=app.grade_cache,
                                    priors=app.document_priors)
            # The model load is start-up, not the first question's retrieval time.
            await app.embedder.embed_query("warm-up")
            return await work(app, pipeline)
    finally:
        await app.aclose()


def _ask(args: argparse.Namespace) -> int:
    question = _question(args.question, args)

    async def run(app: App, pipeline: Pipeline) -> int:
        answer = await pipeline.answer(question)
        if args.json:
            print(json.dumps(answer_to_dict(answer), ensure_ascii=False))
        else:
            print(render_answer(answer))
            if args.explain:
                print(render_explain(answer))
        return 1 if answer.status is AnswerStatus.ERROR else 0

    return asyncio.run(_with_pipeline(args, not args.json, run))


def _chat(args: argparse.Namespace) -> int:
    async def run(app: App, pipeline: Pipeline) -> int:
        print("Ask a question (+ / - to vote on the last answer, 'exit' to leave).")
        history: list[Turn] = []
        last: Answer | None = None
        while True:
            try:
                line = (await asyncio.to_thread(input, "you> ")).strip()
            except (EOFError, KeyboardInterrupt):
                print()
                return 0
            if line.lower() in ("exit", "quit"):
                return 0
            if line in ("+", "-"):
                print(await _vote(app, last, +1 if line == "+" else -1))
                continue
            if not line:
                continue
            last = await pipeline.answer(_question(line, args, tuple(history[-10:])))
            print("sift> " + render_answer(last).replace("\n", "\n      ") + "\n")
            history += [Turn("user", line), Turn("assistant", last.text)]

    return asyncio.run(_with_pipeline(args, True, run))


async def _vote(app: App, answer: Answer | None, vote: int) -> str:
    if answer is None or answer.interaction_id is None:
        return "(nothing to vote on yet)"
    await asyncio.to_thread(app.feedback.vote, answer.interaction_id, getpass.getuser(), vote,
                            "terminal")
    return messages.FEEDBACK_THANKS
