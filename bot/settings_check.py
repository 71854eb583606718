"""Settings mistakes as one sentence: misspelt names (with the nearest valid one) and bad URLs."""

from __future__ import annotations

import difflib
import ipaddress
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

TEST_PREFIX = "SIFT_TEST_"  # the test suite's own variables, never settings
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def nearest(word: str, choices: Iterable[str]) -> str:
    """' ; did you mean X?' (or 'X or Y'), or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=2, cutoff=0.7)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as `SourceSettings` or `list[...]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The valid keys of the table at `loc` (list indexes skipped), [] if it is not a table."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        inner = _model_of(field.annotation) if field is not None else None
        if inner is None:
            return []
        model = inner
    return list(model.model_fields)


def env_names(model: type[BaseModel]) -> list[str]:
    """Every SIFT_* variable that sets something: top-level names and SECTION__KEY ones."""
    names: list[str] = []
    for name, field in model.model_fields.items():
        names.append(f"SIFT_{name.upper()}")
        aliases = getattr(field.validation_alias, "choices", ())
        names += [a for a in aliases if isinstance(a, str) and a.startswith("SIFT_")]
        inner = _model_of(field.annotation)
        if inner is not None and typing.get_origin(field.annotation) is None:
            names += [f"SIFT_{name.upper()}__{key.upper()}" for key in inner.model_fields]
    return names


def unknown_env(environ: Mapping[str, str], model: type[BaseModel]) -> str | None:
    """A sentence about the first SIFT_* variable that sets nothing, or None."""
    valid = env_names(model)
    known = set(valid)
    sections = {n.split("__")[0] for n in valid if "__" in n}
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith("SIFT_") or upper.startswith(TEST_PREFIX):
            continue
        if upper in known or upper.split("__")[0] in sections:
            continue  # SECTION__KEY typos are caught by validation, with the section named
        return (f"Unknown setting {name} in the environment{nearest(upper, valid)} "
                "(an unknown setting stops start-up so that a typo is never ignored).")
    return None


def unknown_source_key(data: Mapping[str, Any], model: type[BaseModel]) -> tuple[int, str] | None:
    """(index, key) of the first [[sources]] key the model does not have: checked before
    validation, whose "unknown kind" for a misspelt `kind` would hide the typo."""
    sources = data.get("sources")
    for i, source in enumerate(sources if isinstance(sources, list) else []):
        if isinstance(source, dict):
            # A table is a kind's own settings ([sources.http]): validation names its keys.
            extra = [k for k in source
                     if k not in model.model_fields and not isinstance(source[k], dict)]
            if extra:
                return i, str(extra[0])
    return None


def log_level_problem(level: str) -> str | None:
    if level.upper() in LOG_LEVELS:
        return None
    return f"SIFT_LOG_LEVEL is {level!r}; use one of {', '.join(LOG_LEVELS)}."


def database_url_problem(url: str) -> str | None:
    """A sentence about a SIFT_DATABASE_URL that cannot work, or None."""
    if not url:
        return None
    scheme, sep, rest = url.partition("://")
    if not sep:
        return (f"SIFT_DATABASE_URL {url!r} is not a database URL: use "
                "sqlite:///relative/path.db, sqlite:////absolute/path.db or "
                "postgresql+psycopg://user:password@host/database.")
    if scheme in ("postgres", "postgresql"):
        return (f"SIFT_DATABASE_URL starts with {scheme}://; Sift talks to PostgreSQL through "
                "psycopg 3: write postgresql+psycopg:// instead.")
    if scheme == "sqlite" and rest.startswith("/"):
        database = rest[1:].split("?", 1)[0]
        if database and database != ":memory:" and not database.startswith("file:"):
            folder = Path(database).parent
            if not folder.is_dir():
                return (f"The folder {folder} for SIFT_DATABASE_URL's SQLite file does not "
                        "exist; create it or correct the URL.")
    return None


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """Addresses and CIDR ranges; ValueError naming the first entry that is neither."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{entry.strip()!r} is not an IP address or a CIDR range "
                             "such as 10.0.0.0/8") from None
    return tuple(networks)


def is_loopback(host: str) -> bool:
    """True only for addresses nothing outside this machine can reach ("" and 0.0.0.0 are all)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything
