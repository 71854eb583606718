"""How `make test` shares the suite among parallel workers (pytest-xdist, `--dist loadfile`)."""

from __future__ import annotations

from typing import Any

import pytest

# Packages whose package-scoped fixture is costly (tests/cluster starts a 3-node Weaviate
# cluster): all their modules run on one worker, one after another.
WHOLE_PACKAGES = ("tests/cluster/",)


def unit_of(nodeid: str) -> str:
    """The unit one worker runs whole: a test module, or a whole package listed above."""
    path = nodeid.split("::", 1)[0]
    return next((package for package in WHOLE_PACKAGES if path.startswith(package)), path)


# The fixtures that start a real server or browser: a test needing any of them (directly or
# through another fixture) is marked `services`, so `pytest -m "not services"` runs quickly
# on a machine without Weaviate, PostgreSQL or Chromium (`make test` still runs everything).
SERVICE_FIXTURES = frozenset({"weaviate_server", "postgres_url", "browser"})


# Contract tests run one body against each backend, choosing the real one by parameter and
# asking for its fixture only then (request.getfixturevalue): the parameter says it.
SERVICE_PARAMS = frozenset({"weaviate", "real", "postgresql", "postgres"})


def needs_services(item: pytest.Item) -> bool:
    if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if item.get_closest_marker("weaviate") or item.get_closest_marker("postgres"):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(isinstance(v, str) and v in SERVICE_PARAMS for v in params.values())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Units with a test marked `slow` go first (order within a unit kept). A worker that took
    a 50-second module last would keep the run waiting while the other workers sit idle."""
    for item in items:
        if needs_services(item):
            item.add_marker(pytest.mark.services)
    first_seen: dict[str, int] = {}
    slow: set[str] = set()
    for position, item in enumerate(items):
        unit = unit_of(item.nodeid)
        first_seen.setdefault(unit, position)
        if item.get_closest_marker("slow"):
            slow.add(unit)
    items.sort(key=lambda item: (unit_of(item.nodeid) not in slow,
                                 first_seen[unit_of(item.nodeid)]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `--dist loadfile`: xdist's per-file scheduling, units as above, in the order the
    suite collected them (not xdist's most-tests-first)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return UnitScheduling(config, log)
