"""`sift weaviate install|start|stop|status`: the Weaviate server Sift manages for itself."""

from __future__ import annotations

import argparse
import asyncio
import json
import warnings
from typing import TYPE_CHECKING

from rag.errors import ConfigError

if TYPE_CHECKING:
    from bot.app import App


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "weaviate", help="install, start, stop or inspect the managed Weaviate server",
        description="Manage the Weaviate server that Sift runs on loopback when "
        "SIFT_WEAVIATE_URL is not set. Data lives in $SIFT_DATA_DIR/weaviate.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser(
        "install", help="get the pinned server binary (cache, release tarball, or Go build)"
    ).set_defaults(handler=_install)
    actions.add_parser("start", help="start the server in the background and wait until "
                       "ready; it runs until `sift weaviate stop`"
                       ).set_defaults(handler=_start)
    actions.add_parser("stop", help="stop the server (started by `start`, or left running by "
                       "a command for SIFT_WEAVIATE__KEEP_RUNNING_MINUTES)"
                       ).set_defaults(handler=_stop)
    status = actions.add_parser("status", help="report version, ports and object count")
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(handler=_status)


def _app(args: argparse.Namespace) -> App:
    from bot.app import App, load_settings

    return App(load_settings(args.config))


def _managed(app: App):
    managed = app.managed_weaviate
    if managed is None:
        raise ConfigError("SIFT_WEAVIATE_URL is set", user_message="SIFT_WEAVIATE_URL is set "
                          f"({app.settings.weaviate_url}): Sift uses that server and manages none.")
    return managed


def _install(args: argparse.Namespace) -> int:
    from weaviate_server.install import install

    app = _app(args)
    version = app.settings.weaviate.version
    path = install(version, app.settings.weaviate_binary, lambda line: print(line, flush=True))
    print(f"ready: {path}")
    return 0


def _start(args: argparse.Namespace) -> int:
    managed = _managed(_app(args))
    if managed.binary is None:
        from weaviate_server.install import cached_binary

        raise ConfigError("no binary", user_message="No Weaviate binary found at "
                          f"{cached_binary(_app(args).settings.weaviate.version)}: "
                          "run `sift weaviate install` first.")
    from weaviate_server.keepalive import stop_watching

    print(f"Starting Weaviate on {managed.url} (data: {managed.data_dir}) ...", flush=True)
    pid = managed.start()
    stop_watching(managed.data_dir)  # started on purpose: it runs until `sift weaviate stop`
    # The server outlives this command on purpose; Popen would warn about that at exit.
    warnings.filterwarnings("ignore", "subprocess .* is still running", ResourceWarning)
    print(f"Weaviate is ready (pid {pid}, http {managed.ports.http}, grpc {managed.ports.grpc}).")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from weaviate_server.keepalive import stop_watching

    managed = _managed(_app(args))
    stop_watching(managed.data_dir)
    print("Weaviate stopped." if managed.stop() else "Weaviate was not running.")
    return 0


async def _object_count(app: App) -> int | None:
    index = app.index()
    try:
        await index.connect(ensure=False)
        return await index.count() if await index.collection_exists() else 0
    finally:
        await index.close()


def _status(args: argparse.Namespace) -> int:
    app = _app(args)
    managed = app.managed_weaviate
    report: dict[str, object] = {"managed": managed is not None, "url": app.index_config.http_url}
    if managed is not None:
        state = managed.status()
        from weaviate_server.keepalive import watcher

        report.update(running=state.running, pid=state.pid, version=state.version,
                      http_port=state.ports.http, grpc_port=state.ports.grpc,
                      data_dir=str(state.data_dir), binary=str(managed.binary or ""))
        if state.running and watcher(managed.data_dir) is not None:
            minutes = app.settings.weaviate.keep_running_minutes
            report["stops_when_idle"] = f"after {minutes:g} min unused (`sift weaviate stop`)"
        if not state.running:
            report["objects"] = None
            _print_status(report, args.json)
            return 3
    report["objects"] = asyncio.run(_object_count(app))
    report["collection"] = app.index_config.collection
    _print_status(report, args.json)
    return 0


def _print_status(report: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report))
        return
    if report.get("managed") and not report.get("running"):
        print(f"Weaviate is not running (binary: {report.get('binary') or 'not installed'}).")
        return
    width = max(len(k) for k in report)
    for key, value in report.items():
        print(f"{key.ljust(width)}  {value}")
