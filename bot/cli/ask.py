"""`sift ask` (one question) and `sift chat` (a conversation with follow-ups and votes)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.chat.access import PUBLIC, Asker, Audience, Visibility
from rag import messages
from rag.errors import InputError, RetrievalError
from rag.types import TERMINAL, Answer, AnswerStatus, AskContext, Mode, Question, Turn

if TYPE_CHECKING:  # the heavy modules load when a command runs, not for `sift --help`
    from bot.app import App
    from rag.pipeline import Pipeline


EMPTY_INDEX = ("The index is empty, so there is nothing to answer from yet: run `sift sync` "
               "(it indexes the [[sources]] of sift.toml, or the sample knowledge base).")
# `sift serve` answers /readyz once the model is loaded, while its first sync still runs.
SYNC_RUNNING = ("The index is still empty: a sync of {sources} has not finished yet; ask again "
                "once it has.")
NO_KEY_NOTE = ("Note: --mode accurate needs an Anthropic API key (SIFT_ANTHROPIC_API_KEY), "
               "so this answer was made in fast mode.")


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
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--as", dest="as_email", metavar="EMAIL",
                     help="answer as this person would see it in a DM: public documents and "
                     "those of the [[groups]] their email belongs to (default: as the public)")
    who.add_argument("--groups", metavar="G1,G2",
                     help="answer as a member of exactly these access groups, plus public "
                     "(default: public documents only)")


def _check_who(args: argparse.Namespace) -> None:
    """An empty --as or --groups is refused, never read as "no restriction": an unset shell
    variable must not open hr-only content."""
    if args.groups is not None and not _listed(args.groups):
        raise InputError("empty --groups", user_message="--groups is empty; name at least one "
                         "access group (e.g. --groups hr), or leave it out to ask as the public.")
    if args.as_email is not None and "@" not in args.as_email:
        raise InputError("bad --as", user_message=f"--as needs an email address (got "
                         f"{args.as_email!r}); leave it out to ask as the public.")


def _listed(value: str) -> tuple[str, ...]:
    return tuple(g.strip() for g in value.split(",") if g.strip())


async def _access_groups(app: App, args: argparse.Namespace) -> tuple[str, ...]:
    """Plain `sift ask` answers as the public; --as as that person would see it privately."""
    if args.groups is not None:
        named = tuple(dict.fromkeys((PUBLIC, *_listed(args.groups))))
        return app.access_resolver.directory.with_principals(named)
    if args.as_email is not None:
        asker = Asker(TERMINAL, getpass.getuser(), email=args.as_email.strip())
        return await app.access_resolver.groups_for(asker, Audience(Visibility.PRIVATE))
    return (PUBLIC,)


def _question(text: str, args: argparse.Namespace, groups: tuple[str, ...],
              history: tuple[Turn, ...] = ()) -> Question:
    if not text.strip():
        raise InputError("empty question", user_message=messages.EMPTY_QUESTION)
    context = AskContext(platform=TERMINAL, user=getpass.getuser(),
                         access_groups=groups)
    return Question(text.strip(), context, history, Mode(args.mode) if args.mode else None)


async def _with_pipeline(args: argparse.Namespace, announce: bool,
                         work: Callable[[App, Pipeline], Awaitable[int]]) -> int:
    from bot.app import App, load_settings
    from bot.runtime import connected_index

    app = App(load_settings(args.config))
    await asyncio.to_thread(app.database.upgrade)
    try:
        async with connected_index(app.weaviate_run, app.index(), announce=announce) as index:
            if await index.count() == 0:  # not a content gap: nothing was synced yet
                running = await asyncio.to_thread(app.sync_state.running)
                raise RetrievalError("the index is empty", user_message=SYNC_RUNNING.format(
                    sources=", ".join(running)) if running else EMPTY_INDEX)
            pipeline = app.pipeline(index, recorder=app.interactions, cache=app.grade_cache,
                                    priors=app.document_priors, syncs=app.sync_state,
                                    reviews=app.document_reviews)
            # The model load is start-up, not the first question's retrieval time.
            await app.embedder.embed_query("warm-up")
            return await work(app, pipeline)
    finally:
        await app.aclose()


def _ask(args: argparse.Namespace) -> int:
    from bot.render.json import answer_to_dict
    from bot.render.terminal import render_answer, render_explain

    _check_who(args)  # bad input fails before Weaviate starts
    _question(args.question, args, ())

    async def run(app: App, pipeline: Pipeline) -> int:
        groups = await _access_groups(app, args)
        question = _question(args.question, args, groups)
        note = _mode_note(app, args)
        answer = await pipeline.answer(replace(question, mode=Mode.FAST) if note else question)
        if args.json:
            data = answer_to_dict(answer)
            if note:
                data["note"] = note
            print(json.dumps(data, ensure_ascii=False))
        else:
            if note:
                print(note + "\n")
            print(render_answer(answer))
            if args.explain:
                print(render_explain(answer))
        return 1 if answer.status is AnswerStatus.ERROR else 0

    return asyncio.run(_with_pipeline(args, not args.json, run))


def _mode_note(app: App, args: argparse.Namespace) -> str:
    """Why the answer is not in the mode asked for, or "" when it is."""
    return NO_KEY_NOTE if args.mode == Mode.ACCURATE.value and app.llm is None else ""


def _chat(args: argparse.Namespace) -> int:
    from bot.render.terminal import render_answer

    _check_who(args)

    async def run(app: App, pipeline: Pipeline) -> int:
        groups = await _access_groups(app, args)
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
            last = await pipeline.answer(_question(line, args, groups, tuple(history[-10:])))
            print("sift> " + render_answer(last).replace("\n", "\n      ") + "\n")
            history += [Turn("user", line), Turn("assistant", last.text)]

    return asyncio.run(_with_pipeline(args, True, run))


async def _vote(app: App, answer: Answer | None, vote: int) -> str:
    if answer is None or answer.interaction_id is None:
        return "(nothing to vote on yet)"
    await asyncio.to_thread(app.feedback.vote, answer.interaction_id, getpass.getuser(), vote,
                            "terminal")
    return messages.FEEDBACK_THANKS
