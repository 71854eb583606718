"""How fast this machine is right now: a fixed piece of work timed in CPU time, and steal.

Run:  .venv/bin/python -m bench.machine [--seconds 60] [--every 1]

The machines these benchmarks run on are shared: the same code on the same input can take a
third longer in one hour than in the next. A benchmark that runs the probe beside its work
(`probe()`) can tell a slower Sift from a slower machine: the probe times the same pure-Python
loop again and again in its own CPU time, so waiting for a core (the benchmark's own load)
does not count, while what slows every program does (clock speed, a neighbour on the same
core or caches). Steal is the time the hypervisor ran someone else while this machine's
cores had work (the eighth field of /proc/stat's first line). Run alone, this module prints
the probe's readings on an otherwise idle machine: a baseline to compare a benchmark's with.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

# The probe process: times the loop every `every` seconds and prints (monotonic time, CPU ms).
PROBE = """
import sys, time
every = float(sys.argv[1])
while True:
    start = time.process_time()
    total = 0
    for i in range(300_000):
        total += i * i % 7
    print(time.monotonic(), (time.process_time() - start) * 1000, flush=True)
    time.sleep(every)
"""


def machine_ticks() -> list[int]:
    """The first line of /proc/stat, in ticks: user nice system idle iowait irq softirq
    steal."""
    return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]


def busy_seconds() -> float:
    """Non-idle CPU time of the whole machine so far, all cores."""
    ticks = machine_ticks()
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def steal_seconds() -> float:
    """Time the hypervisor ran someone else while this machine's cores had work, so far."""
    return machine_ticks()[7] / os.sysconf("SC_CLK_TCK")


@dataclass
class Speed:
    """The probe's readings over a stretch of time, and the steal over the same stretch."""

    readings: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, CPU ms)
    steal_s: float = 0.0
    wall_s: float = 0.0

    @property
    def probe_ms(self) -> float:
        """Median CPU ms of the probe's work (0.0 without a reading)."""
        return statistics.median(ms for _, ms in self.readings) if self.readings else 0.0

    @property
    def steal_share(self) -> float:
        """Steal as a share of all the cores' time."""
        return self.steal_s / max(1e-9, self.wall_s * (os.cpu_count() or 1))

    def summary(self) -> str:
        return (f"probe {self.probe_ms:.1f} ms median over {len(self.readings)} readings, "
                f"steal {100 * self.steal_share:.1f}% of the cores")


@contextmanager
def probe(every_s: float = 2.0) -> Iterator[Speed]:
    """Run the probe beside the block (about 2% of a core at the default pace); the readings
    and the steal are in the yielded `Speed` once the block ends."""
    speed = Speed()
    process = subprocess.Popen([sys.executable, "-c", PROBE, str(every_s)],
                               stdout=subprocess.PIPE, text=True)
    started, steal_before = time.monotonic(), steal_seconds()
    try:
        yield speed
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
        speed.wall_s = time.monotonic() - started
        speed.steal_s = steal_seconds() - steal_before
        for line in out.splitlines():
            at, ms = line.split()
            speed.readings.append((float(at), float(ms)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to probe")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between readings")
    args = parser.parse_args()
    with probe(args.every) as speed:
        time.sleep(args.seconds)
    values = sorted(ms for _, ms in speed.readings)
    print(speed.summary())
    if values:
        print(f"probe ms: min {values[0]:.1f}, p10 {values[len(values) // 10]:.1f}, "
              f"max {values[-1]:.1f}")


if __name__ == "__main__":
    main()
