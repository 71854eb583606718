"""A flood of Slack events against one `sift serve`: is the work in progress, and memory, bounded?

Run:  .venv/bin/python -m bench.slack_flood [--seconds 90] [--senders 30] [--max-in-flight N]

One `sift serve` on real PostgreSQL (a throwaway server) and a managed Weaviate with an empty
knowledge base. `--senders` clients post signed channel messages that need no answer ("just
chatting") to /slack/events as fast as it acknowledges them, for `--seconds`: every event
still costs Sift a policy lookup. Reports events sent and refused (not acknowledged, so
Slack would deliver them again), RSS every 10 s, and how long `sift serve` stays busy after
the last event (the backlog it took on). `--max-in-flight` sets SIFT_CHAT__MAX_IN_FLIGHT
(a very large value shows the process without a bound).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench.cli_timing import ROOT, environment, sift
from bench.serve_load import cpu_seconds, postgres, rss_mb, start_serve, wait_ready
from tests.fakes.slack_payloads import BOT_TOKEN, SIGNING_SECRET, event_request, message, sign
from tests.fakes.slack_server import FakeSlack
from weaviate_server.process import free_port


@dataclass
class Counts:
    sent: int = 0
    refused: int = 0


async def sender(url: str, http: aiohttp.ClientSession, numbers: itertools.count[int],
                 deadline: float, counts: Counts) -> None:
    while time.monotonic() < deadline:
        n = next(numbers)
        body, content_type = event_request(message(
            f"just chatting {n}", ts=f"{1_700_000_000 + n}.000001", event_id=f"EvF{n:09d}"))
        async with http.post(url, data=body.encode(),
                             headers={"Content-Type": content_type, **sign(body)}) as response:
            await response.read()
            counts.sent += 1
            if response.status != 200:
                counts.refused += 1


async def sampler(pid: int, deadline: float, counts: Counts) -> None:
    started = time.monotonic()
    while time.monotonic() < deadline:
        print(f"{time.monotonic() - started:5.0f} s  sent {counts.sent:8d}  refused "
              f"{counts.refused:8d}  RSS {rss_mb(pid)['VmRSS']:7.1f} MB", flush=True)
        await asyncio.sleep(min(10.0, max(0.0, deadline - time.monotonic())))


async def busy_after(pid: int, idle_cpu_s: float = 0.1, every_s: float = 2.0) -> float:
    """Seconds until `sift serve` uses less than `idle_cpu_s` of CPU in `every_s`."""
    started, last = time.monotonic(), cpu_seconds(pid)
    while True:
        await asyncio.sleep(every_s)
        now = cpu_seconds(pid)
        if now - last < idle_cpu_s:
            return time.monotonic() - started - every_s
        last = now


async def flood(args: argparse.Namespace, env: dict[str, str]) -> None:
    slack = FakeSlack()
    await slack.start()
    port = free_port()
    serve_env = {**env, "PYTHONPATH": str(ROOT), "SIFT_PORT": str(port),
                 "SIFT_SLACK_BOT_TOKEN": BOT_TOKEN, "SIFT_SLACK_SIGNING_SECRET": SIGNING_SECRET,
                 "SIFT_SLACK_API_URL": slack.api_url, "SIFT_SYNC__SYNC_ON_START": "false"}
    if args.max_in_flight is not None:
        serve_env["SIFT_CHAT__MAX_IN_FLIGHT"] = str(args.max_in_flight)
    process, errors = start_serve([], serve_env)
    try:
        await asyncio.to_thread(wait_ready, f"http://127.0.0.1:{port}", process, 1, errors)
        counts, numbers = Counts(), itertools.count(1)
        deadline = time.monotonic() + args.seconds
        url = f"http://127.0.0.1:{port}/slack/events"
        async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=args.senders + 5)) as http:
            await asyncio.gather(sampler(process.pid, deadline, counts),
                                 *(sender(url, http, numbers, deadline, counts)
                                   for _ in range(args.senders)))
        end_rss = rss_mb(process.pid)["VmRSS"]
        after = await busy_after(process.pid)
        print(f"sent {counts.sent} events in {args.seconds:.0f} s "
              f"({counts.sent / args.seconds:.0f}/s), refused {counts.refused} "
              f"({100 * counts.refused / max(1, counts.sent):.0f}%); RSS at the end "
              f"{end_rss:.1f} MB, {rss_mb(process.pid)['VmRSS']:.1f} MB once idle; busy "
              f"{after:.0f} s after the last event")
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 60)
        await slack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--senders", type=int, default=30, help="concurrent clients posting")
    parser.add_argument("--max-in-flight", type=int, default=None,
                        help="SIFT_CHAT__MAX_IN_FLIGHT for sift serve (default: its own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sift-flood-") as scratch, \
            postgres() as (database_url, _admin):
        env = {**environment(Path(scratch)), "SIFT_DATABASE_URL": database_url}
        sift(ROOT, env, "weaviate", "start")
        try:
            asyncio.run(flood(args, env))
        finally:
            sift(ROOT, env, "weaviate", "stop")


if __name__ == "__main__":
    main()
