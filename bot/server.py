"""`sift serve`: starts Weaviate, the database, the web server and the sync scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from contextlib import AsyncExitStack

from bot.admin import routes as admin_console
from bot.app import App
from bot.hooks import PushRoutes
from bot.startup import announce
from bot.teams.auth import check_exposure
from bot.weaviate.supervisor import WeaviateSupervisor
from bot.web import Health, HealthCheck, Readiness, build_web_app, start_site
from rag.index import WeaviateIndex
from sync.push_queue import PushSyncs

log = logging.getLogger(__name__)


async def _start_weaviate(app: App, stack: AsyncExitStack) -> WeaviateSupervisor | None:
    """Start the managed Weaviate and supervise it; None when Sift did not start it."""
    managed = app.managed_weaviate
    if managed is None:
        log.info("using the Weaviate server at %s", app.settings.weaviate_url)
        return None
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


async def _warm_up(app: App, readiness: Readiness) -> None:
    """Load the embedding model before the first question, whose timings would else hold it."""
    readiness.loading("embedding model", f"loading {app.embedder.name}")
    try:
        await app.embedder.embed_query("warm-up")
    except Exception as exc:  # not ready, and /readyz says why; questions will retry the load
        log.exception("the embedding model failed to load")
        readiness.loading("embedding model", f"failed to load: {exc}")
        return
    # What start-up loaded (SDKs, the model, settings) lives as long as the process: moved out
    # of the collector's sight, a full collection scans only what answers create. Measured in
    # bench.serve_load: full collections paused every answer in flight for up to ~270 ms.
    gc.collect()
    gc.freeze()
    readiness.done("embedding model")


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def serve(app: App, *, started: asyncio.Event | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Run until SIGINT/SIGTERM (or `stop` is set), then shut everything down in reverse."""
    stop = stop or _stop_event()
    check_exposure(app.settings)  # Teams: refuse an unauthenticated public /api/messages
    async with AsyncExitStack() as stack:
        stack.push_async_callback(app.aclose)
        stack.callback(gc.unfreeze)  # what _warm_up froze is collectable again once stopped
        supervisor = await _start_weaviate(app, stack)
        await asyncio.to_thread(app.database.upgrade)
        index = app.index()
        await index.connect()
        stack.push_async_callback(index.close)
        checks = {"weaviate": _index_check(index), **app.health_checks()}
        if supervisor is not None:
            checks["weaviate_process"] = supervisor.health
        readiness = Readiness()
        web_app = build_web_app(checks, readiness=readiness)
        pipeline = app.pipeline(index, recorder=app.interactions, cache=app.grade_cache,
                                priors=app.document_priors)
        service = app.chat_service(pipeline)
        seeded = await asyncio.to_thread(app.seed_channel_policies)
        if seeded:
            log.info("channel policies added from the settings: %s", ", ".join(seeded))
        flow = app.chat_flow(service)  # the one ask and vote flow of every chat surface
        # --- Teams: POST /api/messages (JWT-checked; anonymous only on loopback) ------------
        if app.settings.teams.enabled:
            teams = app.teams(flow)
            teams.mount(web_app)
            stack.push_async_callback(teams.close)  # after the site stops: drain answers
        # --- end Teams ---------------------------------------------------------------------
        # --- Slack: POST /slack/events (signed), or Socket Mode with SIFT_SLACK_APP_TOKEN ----
        if app.settings.slack_bot_token is not None:
            slack = app.slack(flow)
            if slack.socket_mode:
                await slack.start_socket_mode()
            else:
                slack.mount(web_app)
            stack.push_async_callback(slack.close)  # after the site stops: drain answers
        # --- end Slack ---------------------------------------------------------------------
        for problem in await app.access_resolver.startup_problems():  # named, not fatal
            log.warning("permissions: %s", problem)
        syncs = app.sync_scheduler(app.sync_runner(index))  # started below, after the site
        # --- Push: POST /sync/hooks/<source> (each platform's signature checked) ------------
        pushes = PushSyncs(syncs.runner)  # the same runner, so the same locks, as the schedule
        PushRoutes(app.push_endpoints(), pushes).mount(web_app)
        stack.push_async_callback(pushes.stop)  # after the site stops: nothing new arrives
        console = admin_console.mount(web_app, app.database, app.settings, app.embedder,
                                      syncs)  # /admin
        # --- Web chat: the page at /; beyond loopback only behind the console's sign-in ---
        chat_page = app.web_chat(flow, admin_console.chat_gate(console) if console else None)
        if chat_page is not None:
            chat_page.mount(web_app)
        runner = await start_site(web_app, app.settings.host, app.settings.port)
        stack.push_async_callback(runner.cleanup)
        # The model loads after the site is up: /readyz says 503 "loading" until it has.
        warm_up = asyncio.create_task(_warm_up(app, readiness))
        stack.push_async_callback(_cancel, warm_up)
        # --- Sync: scheduled passes per source; a first full pass starts in the background --
        syncs.start()
        stack.push_async_callback(syncs.stop)  # first on exit: cancel and record running syncs
        # --- end Sync ----------------------------------------------------------------------
        print(f"Sift is serving on http://{app.settings.host}:{app.settings.port} "
              "(Ctrl-C to stop)", flush=True)
        await announce(app, admin=console is not None)  # a line per surface: on, or off and why
        if started is not None:
            started.set()
        await stop.wait()
        log.info("shutting down")
    print("Sift stopped.", flush=True)
