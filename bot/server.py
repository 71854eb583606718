"""`sift serve`: starts Weaviate, the database, the web server and the sync scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import os
import signal
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot import surfaces
from bot.admin import routes as admin_console
from bot.admin.answers import REVIEW
from bot.answers import digest
from bot.answers.owners import Owners
from bot.answers.schedule import on_schedule
from bot.app import App
from bot.chat.notify import Switchboard
from bot.hooks import PushRoutes
from bot.llm_setup import verify_models
from bot.metrics.registry import Metrics, reset_directory
from bot.metrics.route import MetricsRoute
from bot.startup import announce, place_of
from bot.surface_spec import Endpoint
from bot.tracing import start_tracing
from bot.web import Health, HealthCheck, Readiness, build_web_app, start_site
from bot.workers import Workers, worker_command
from rag.errors import ConfigError
from rag.index import WeaviateIndex
from storage.audit import AuditLog
from storage.columns import utc_now
from sync.push_queue import PushSyncs
from weaviate_server import keepalive
from weaviate_server.supervisor import WeaviateSupervisor

if TYPE_CHECKING:
    from bot.settings import Settings

log = logging.getLogger(__name__)


async def _start_weaviate(app: App, stack: AsyncExitStack) -> WeaviateSupervisor | None:
    """Start the managed Weaviate and supervise it; None when Sift did not start it."""
    managed = app.managed_weaviate
    if managed is None:
        log.info("using the Weaviate server at %s", app.settings.weaviate_url)
        return None
    # One that a command left running is not stopped under us (weaviate_server/keepalive.py).
    stack.enter_context(keepalive.in_use(managed.data_dir))
    if managed.status().running:
        log.info("Weaviate already running at %s; leaving it running on exit", managed.url)
        return None
    log.info("starting Weaviate at %s (data in %s)", managed.url, managed.data_dir)
    timeout_s = app.settings.weaviate.start_timeout_s
    await asyncio.to_thread(managed.start, timeout_s)
    stack.callback(managed.stop)
    supervisor = WeaviateSupervisor(managed, timeout_s)
    supervisor.start()
    stack.push_async_callback(supervisor.stop)  # before the stop above: no restart on exit
    return supervisor


def _index_check(index: WeaviateIndex) -> HealthCheck:
    async def check() -> Health:
        ok = await index.is_ready()
        return Health(ok, "" if ok else f"not reachable at {index.config.http_url}")

    return check


# The youngest generation is collected once per this many new container objects rather than
# Python's 700. Answers keep many objects alive for a few hundred milliseconds; at 700 most
# were still in flight when collected, survived into the older generations and were scanned
# there again. Measured in bench.serve_load (50 conversations back to back): the collector's
# time went from 66-74 to 26-34 ms per second, full collections from one every 2 s to almost
# none; each young collection pauses longer (~15 ms) but 40 times less often.
YOUNG_COLLECTION_EVERY = 10_000


def _process_check(supervisor: WeaviateSupervisor) -> HealthCheck:
    async def check() -> Health:
        health = await supervisor.health()
        return Health(health.ok, health.detail)

    return check


async def _warm_up(app: App, readiness: Readiness, *, freeze_heap: bool) -> None:
    """Load the embedding model before the first question, whose timings would else hold it."""
    readiness.loading("embedding model", f"loading {app.embedder.name}")
    try:
        await app.embedder.embed_query("warm-up")
    except Exception as exc:  # not ready, and /readyz says why; questions will retry the load
        log.exception("the embedding model failed to load")
        readiness.loading("embedding model", f"failed to load: {exc}")
        return
    if freeze_heap:
        # What start-up loaded (SDKs, the model, settings) lives as long as the process: moved
        # out of the collector's sight, a full collection scans only what answers create.
        # Measured in bench.serve_load: full collections paused every answer in flight for up
        # to ~270 ms.
        gc.collect()
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])
    readiness.done("embedding model")


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _check_surfaces(app: App) -> None:
    """Before anything starts: each surface refuses what it could not serve safely."""
    place = place_of(app.settings)
    for spec in surfaces.SPECS:
        if spec.check is not None:
            spec.check(spec.config(app.settings), place)


async def _finish(endpoint: Endpoint, timeout_s: float = 30.0) -> None:
    """The site took its last request: answers in flight finish, then connections close."""
    await endpoint.drain(timeout_s)
    await endpoint.close()


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


AUDIT_PURGE_EVERY_S = 24 * 3600


async def _keep_audit(app: App) -> None:
    """Audit entries older than SIFT_STORAGE__AUDIT_RETENTION_DAYS go, at start and daily."""
    days = app.settings.storage.audit_retention_days
    if not days:
        return
    log_ = AuditLog(app.database)
    while True:
        try:
            cutoff = utc_now() - timedelta(days=days)
            removed = await asyncio.to_thread(log_.purge, cutoff)
            if removed:
                log.info("audit log: removed %d entries older than %g days", removed, days)
        except Exception:  # the next day tries again; the log says why this one failed
            log.exception("audit log: the retention purge failed")
        await asyncio.sleep(AUDIT_PURGE_EVERY_S)


def _answers_timetable(app: App, owners: Owners, switchboard: Switchboard
                       ) -> list[Coroutine[Any, Any, None]]:
    """Owners' reminders (at start and on [answers] remind_cron) when a switchboard can
    reach them, and the weekly digest when [answers] digest_to names a channel."""
    answers = app.settings.answers
    if not switchboard.platforms:
        return []
    jobs = [on_schedule(answers.remind_cron, owners.remind, "review reminders", app.database,
                        at_start=True)]
    if answers.digest_to:
        async def send_digest() -> None:
            found = await digest.gather(app.database, app.embedder, app.document_reviews,
                                        app.answer_drafts)
            await digest.post(found, answers.digest_to, switchboard)

        jobs.append(on_schedule(answers.digest_cron, send_digest, "weekly digest",
                                app.database))
    return jobs


def _observe(app: App, stack: AsyncExitStack, *, shared: bool, primary: bool) -> None:
    """Metrics (in files every worker shares, when there are workers) and, when an OTLP
    endpoint is configured, traces; both before anything they observe is built."""
    directory = None
    if shared:
        directory = app.data_dir / "metrics"
        if primary:  # the workers start later, and add their files to the fresh directory
            reset_directory(directory)
    app.metrics = Metrics(directory)
    stack.callback(app.metrics.close)
    tracing = start_tracing(os.environ)
    if tracing is not None:  # off the loop: the last export may wait on the network
        stack.push_async_callback(asyncio.to_thread, tracing.close)


def _mount_metrics(app: App, web_app: web.Application, checks: dict[str, HealthCheck]) -> None:
    assert app.metrics is not None
    token = app.settings.metrics.token
    up: dict[str, HealthCheck] = {name: checks[name] for name in ("weaviate", "database")
                                  if name in checks}
    MetricsRoute(app.metrics, token.get_secret_value() if token else None, up).mount(web_app)


def _check_workers(app: App, worker: bool) -> int:
    """How many more processes this one starts (0 in a worker): ConfigError when the port
    cannot be shared."""
    count = 0 if worker else app.settings.workers - 1
    if count and app.settings.port == 0:
        raise ConfigError("SIFT_WORKERS > 1 with SIFT_PORT=0", user_message=(
            f"SIFT_WORKERS is {app.settings.workers}, but SIFT_PORT is 0 (any free port): "
            "workers share one port, so set SIFT_PORT to a port number."))
    return count


def _start_workers(app: App, stack: AsyncExitStack, count: int, config: Path | None
                   ) -> Workers | None:
    if not count:
        return None
    exited = app.metrics.process_exited if app.metrics is not None else None
    workers = Workers(worker_command(os.getpid(), config), count, on_exit=exited)
    workers.start()
    stack.push_async_callback(workers.stop)
    log.info("started %d more worker process%s on port %d", count, "es" if count > 1 else "",
             app.settings.port)
    return workers


async def _listen(web_app: web.Application, app: App, *, shared: bool) -> web.AppRunner:
    """The site on SIFT_HOST:SIFT_PORT; a port something else holds is one sentence."""
    host, port = app.settings.host, app.settings.port
    try:
        return await start_site(web_app, host, port, shared=shared)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise ConfigError(f"http://{host}:{port}: {exc}", user_message=(
            f"Cannot serve on http://{host}:{port}: something else is already listening "
            "there (another `sift serve`?); stop it, or set SIFT_PORT to a free port.")) from exc


def _feeds(settings: Settings, pushes: PushSyncs, kind: str) -> Callable[[str], None] | None:
    """A surface whose platform is also a source (Slack channels) hands the ids of what
    changed there (a reply, an edit, a deletion) to every source of that kind."""
    names = [s.name for s in settings.resolved_sources if s.kind == kind]
    if not names:
        return None

    def pushed(doc_id: str) -> None:
        for name in names:
            pushes.submit(name, [doc_id])

    return pushed


async def serve(app: App, *, started: asyncio.Event | None = None,
                stop: asyncio.Event | None = None, config: Path | None = None,
                worker: bool = False, freeze_heap: bool = True) -> None:
    """Run until SIGINT/SIGTERM (or `stop` is set), then shut everything down in reverse.
    `worker`: one of SIFT_WORKERS' extra processes (bot/workers.py), which leaves Weaviate,
    the start-up sync and the start-up messages to the process that started it.
    `freeze_heap=False` is for a host program that runs serve inside its own process (the
    tests): its heap is not start-up state to freeze, and a full collection of a large host
    heap at every start is a cost with nothing to gain."""
    stop = stop or _stop_event()
    _check_surfaces(app)  # e.g. Teams refuses an unauthenticated /api/messages beyond loopback
    if app.llm_endpoint is not None and app.llm_endpoint.provider == "openai":  # checked now
        await verify_models(app.settings, app.llm)
    more = _check_workers(app, worker)
    async with AsyncExitStack() as stack:
        _observe(app, stack, shared=worker or app.settings.workers > 1, primary=not worker)
        stack.push_async_callback(app.aclose)
        if freeze_heap:
            stack.callback(gc.unfreeze)  # what _warm_up froze is collectable again once stopped
            stack.callback(gc.set_threshold, *gc.get_threshold())  # and its pace as it was
        supervisor = None if worker else await _start_weaviate(app, stack)
        await asyncio.to_thread(app.database.upgrade)
        index = app.index()
        await index.connect()
        stack.push_async_callback(index.close)
        checks = {"weaviate": _index_check(index), **app.health_checks()}
        if supervisor is not None:
            checks["weaviate_process"] = _process_check(supervisor)
        readiness = Readiness()
        web_app = build_web_app(checks, readiness=readiness, proxies=app.trusted_proxies,
                                access_log=app.settings.access_log)
        _mount_metrics(app, web_app, checks)
        pipeline = app.pipeline(index, recorder=app.interactions, cache=app.grade_cache,
                                priors=app.document_priors, syncs=app.sync_state,
                                reviews=app.document_reviews)
        service = app.chat_service(pipeline)
        seeded = [] if worker else await asyncio.to_thread(app.seed_channel_policies)
        if seeded:
            log.info("channel policies added from the settings: %s", ", ".join(seeded))
        # Messages Sift starts (owners' reminders, the digest) reach people through the
        # surfaces that can start a conversation, registered below as they are built.
        switchboard = Switchboard()
        owners = app.owners(switchboard)
        flow = app.chat_flow(service, owners)  # the one ask and vote flow of every surface
        for problem in await app.access_resolver.startup_problems():  # named, not fatal
            log.warning("permissions: %s", problem)
        # Started below, after the site; the start-up pass runs in the primary only.
        syncs = app.sync_scheduler(app.sync_runner(index), first_pass=not worker)
        # --- Push: POST /sync/hooks/<source> (each platform's signature checked) ------------
        pushes = PushSyncs(syncs.runner)  # the same runner, so the same locks, as the schedule
        PushRoutes(app.push_endpoints(), pushes, app.dedupe.claim, app.metrics).mount(web_app)
        stack.push_async_callback(pushes.stop)  # after the site stops: nothing new arrives
        # Approved answers are indexed through the same runner (the console's approvals, and
        # the experts' replies a channel policy approves as they are captured).
        review = app.answer_review(syncs.runner, app.pipeline(
            index, cache=app.grade_cache, priors=app.document_priors, syncs=app.sync_state,
            reviews=app.document_reviews))
        console = admin_console.mount(web_app, app.database, app.settings, app.embedder,
                                      syncs)  # /admin
        if console is not None:
            console[REVIEW] = review
        # --- The chat surfaces (bot/surfaces.py): Slack, Teams, the web chat ----------------
        around = replace(app.around(flow, admin_console.chat_gate(console) if console else None),
                         capture=app.capture_flow(service, flow.policies, review), owners=owners)
        for spec in surfaces.SPECS:
            fed = replace(around, pushed=_feeds(app.settings, pushes, spec.platform))
            endpoint = spec.build(spec.config(app.settings), fed)
            if endpoint is not None:
                endpoint.mount(web_app)
                await endpoint.start()
                stack.push_async_callback(_finish, endpoint)  # after the site stops
                if (notifier := getattr(endpoint, "notifier", None)) is not None:
                    switchboard.add(spec.platform, notifier)
        runner = await _listen(web_app, app, shared=worker or app.settings.workers > 1)
        stack.push_async_callback(runner.cleanup)
        workers = _start_workers(app, stack, more, config)  # once the schema is migrated
        if workers is not None:
            checks["workers"] = workers.health
        # The model loads after the site is up: /readyz says 503 "loading" until it has.
        warm_up = asyncio.create_task(_warm_up(app, readiness, freeze_heap=freeze_heap))
        stack.push_async_callback(_cancel, warm_up)
        if not worker:  # one process keeps the audit log's retention and the answers' timetable
            for task in (_keep_audit(app), *_answers_timetable(app, owners, switchboard)):
                stack.push_async_callback(_cancel, asyncio.create_task(task))
        # --- Sync: scheduled passes per source; a first full pass starts in the background --
        syncs.start()
        stack.push_async_callback(syncs.stop)  # first on exit: cancel and record running syncs
        # --- end Sync ----------------------------------------------------------------------
        if not worker:
            print(f"Sift is serving on http://{app.settings.host}:{app.settings.port} "
                  "(Ctrl-C to stop)", flush=True)
            await announce(app.settings, app.llm_endpoint, app.sync_state.last_success,
                           admin=console is not None)  # a line per surface
        if started is not None:
            started.set()
        await stop.wait()
        log.info("shutting down")
    if not worker:
        print("Sift stopped.", flush=True)
