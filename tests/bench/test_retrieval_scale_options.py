"""`bench.retrieval_scale`'s variant and restart settings: read as written, refused in one
sentence before an hour's import starts."""

from __future__ import annotations

import argparse

import pytest

from bench.retrieval_scale import REOPEN_OPTIONS, options, size_bytes, variant


def defaults() -> argparse.Namespace:
    return argparse.Namespace(ef=-1, max_connections=32, memory_limit="")


def test_a_variant_sets_the_graph_and_the_server_for_itself() -> None:
    made = variant("rq8:max_connections=16:memory_limit=3GiB:disk_access=pread", defaults())
    assert (made["compression"], made["max_connections"], made["ef"]) == ("rq8", 16, -1)
    assert (made["memory_limit"], made["disk_access"], made["memory_cap"]) == ("3GiB", "pread",
                                                                               "")
    assert variant("none", defaults())["disk_access"] == "mmap"


@pytest.mark.parametrize(("spec", "expected"), [
    ("disk_access=direct", "disk_access is mmap or pread"),
    ("max_connections=16", "'max_connections=16' is not one of memory_limit=…"),
    ("memory_cap=4GB", "memory_cap=4GB: write a whole number of GiB"),
    ("memory_cap=", "'memory_cap=' is not one of"),
])
def test_restart_settings_that_cannot_be_used_are_refused(spec: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected.replace(".", r"\.")
                       .replace("…", ".").replace("(", r"\(")):
        options(spec, REOPEN_OPTIONS, "--reopen")


def test_sizes_are_read_in_binary_units() -> None:
    assert size_bytes("4GiB") == 4 * 1024**3
    assert size_bytes("512MiB") == 512 * 1024**2
    assert size_bytes("100B") == 100
