"""How fast this machine is right now: a fixed piece of work timed in CPU time, and steal.

Run:  .venv/bin/python -m bench.machine [--seconds 60] [--every 1]

The machines these benchmarks run on are shared: the same code on the same input can take a
third longer in one hour than in the next. A benchmark that runs the probe beside its work
(`probe()`) can tell a slower Sift from a slower machine: the probe times the same work again
and again in its own CPU time (a pure-Python loop, and float32 matrix products as the
embedding model does), so waiting for a core (the benchmark's own load) does not count,
while what slows every program does (clock speed, a neighbour on the same core, caches or
memory). Steal is the time the hypervisor ran someone else while this machine's
cores had work (the eighth field of /proc/stat's first line). Single readings vary (on an
idle machine the loop took 28-51 ms): compare medians, between runs doing similar work. Run
alone, this module prints the readings on an otherwise idle machine.
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

# The probe process: every `every` seconds, times an interpreter-bound loop and float32 matrix
# products (the kind of work the embedding model does: a machine can be slow at one and not
# the other) and prints (monotonic time, loop CPU ms, products CPU ms).
PROBE = """
import sys, time
import numpy
every = float(sys.argv[1])
a = numpy.random.default_rng(0).random((256, 256), dtype=numpy.float32)
while True:
    start = time.process_time()
    total = 0
    for i in range(300_000):
        total += i * i % 7
    loop = time.process_time()
    for _ in range(40):
        a @ a
    print(time.monotonic(), (loop - start) * 1000, (time.process_time() - loop) * 1000,
          flush=True)
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


def process_cpu(pid: int | str) -> tuple[str, float]:
    """(command name, user + system CPU seconds so far) of one process, from fields 2, 14 and
    15 of /proc/<pid>/stat; OSError once it has exited."""
    head, tail = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
    fields = tail.split()
    return head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_seconds() -> float:
    """Time the hypervisor ran someone else while this machine's cores had work, so far."""
    return machine_ticks()[7] / os.sysconf("SC_CLK_TCK")


@dataclass
class Speed:
    """The probe's readings over a stretch of time, and the steal over the same stretch."""

    # (monotonic time, the loop's CPU ms, the matrix products' CPU ms)
    readings: list[tuple[float, float, float]] = field(default_factory=list)
    steal_s: float = 0.0
    wall_s: float = 0.0

    @property
    def loop_ms(self) -> float:
        """Median CPU ms of the probe's interpreter loop (0.0 without a reading)."""
        return statistics.median(r[1] for r in self.readings) if self.readings else 0.0

    @property
    def matmul_ms(self) -> float:
        """Median CPU ms of the probe's matrix products (0.0 without a reading)."""
        return statistics.median(r[2] for r in self.readings) if self.readings else 0.0

    @property
    def steal_share(self) -> float:
        """Steal as a share of all the cores' time."""
        return self.steal_s / max(1e-9, self.wall_s * (os.cpu_count() or 1))

    def summary(self) -> str:
        return (f"probe loop {self.loop_ms:.1f} ms, matrix products {self.matmul_ms:.1f} ms "
                f"(CPU, medians of {len(self.readings)} readings; lower on a faster machine), "
                f"steal {100 * self.steal_share:.1f}% of the cores")


# /proc/cpuinfo flags for bfloat16 products, which OpenVINO uses for the embedding model.
BF16_FLAGS = {"amx_bf16": "AMX", "avx512_bf16": "AVX-512 BF16"}


def processor(cpuinfo: str | None = None) -> str:
    """The CPU's model and its bfloat16 instructions, which the probe does not see: the AWS
    sync took 478 s on an AMD EPYC host (AVX-512 BF16) while the probe read as quick as it
    ever has, against 248 s on an earlier day's host, unrecorded. Compare runs on alike hosts."""
    text = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        fields.setdefault(name.strip(), value.strip())  # the first processor speaks for all
    flags = set(fields.get("flags", "").split())
    bf16 = [label for flag, label in BF16_FLAGS.items() if flag in flags]
    return (f"{fields.get('model name') or 'an unnamed CPU'}, {os.cpu_count()} cores; "
            f"bfloat16 products: {', '.join(bf16) or 'none (float32)'}")


@contextmanager
def probe(every_s: float = 2.0) -> Iterator[Speed]:
    """Run the probe beside the block (about 2% of a core at the default pace); the readings
    and the steal are in the yielded `Speed` once the block ends."""
    speed = Speed()
    # One thread for the products: their CPU time is then the work of one core.
    env = {**os.environ, **dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                           "MKL_NUM_THREADS"), "1")}
    process = subprocess.Popen([sys.executable, "-c", PROBE, str(every_s)],
                               stdout=subprocess.PIPE, text=True, env=env)
    started, steal_before = time.monotonic(), steal_seconds()
    try:
        yield speed
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
        speed.wall_s = time.monotonic() - started
        speed.steal_s = steal_seconds() - steal_before
        for line in out.splitlines():
            fields = line.split()
            if len(fields) == 3:  # the last line can be cut short by the terminate
                at, loop, products = (float(v) for v in fields)
                speed.readings.append((at, loop, products))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to probe")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between readings")
    args = parser.parse_args()
    with probe(args.every) as speed:
        time.sleep(args.seconds)
    print(processor())
    print(speed.summary())
    for name, column in (("loop", 1), ("matrix products", 2)):
        values = sorted(r[column] for r in speed.readings)
        if values:
            print(f"{name} ms: min {values[0]:.1f}, p10 {values[len(values) // 10]:.1f}, "
                  f"max {values[-1]:.1f}")


if __name__ == "__main__":
    main()
