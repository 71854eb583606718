"""Who may read a knowledge article: its "can read" user criteria (else its base's), mapped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Access = tuple[tuple[str, ...], tuple[str, ...]]  # (principals, warnings)
UNMAPPED = ("department", "company", "location")  # conditions with no [[groups]] counterpart


def ids(value: Any) -> tuple[str, ...]:
    """A list field (`can_read_user_criteria`, a criterion's `group`): comma-separated sys_ids."""
    return tuple(p.strip() for p in str(value or "").split(",") if p.strip())


@dataclass(frozen=True)
class Directory:
    """The user criteria the articles name, and the names of the groups and roles they name."""

    criteria: Mapping[str, Mapping[str, Any]]
    groups: Mapping[str, str]  # sys_id -> name
    roles: Mapping[str, str]


def _true(value: Any) -> bool:
    return str(value).lower() == "true"


def criterion_principals(sys_id: str, d: Directory) -> Access:
    """A criterion's users, groups and roles; what it grants that cannot be mapped is left
    out (narrower, never wider). A script, or "match all" of several conditions, maps nothing."""
    row = d.criteria.get(sys_id)
    if row is None:
        return (), (f"user criterion {sys_id} cannot be read: left out",)
    name = str(row.get("name") or sys_id)
    if not _true(row.get("active", "true")):
        return (), ()
    if _true(row.get("advanced")):
        return (), (f"user criterion {name!r} is a script: left out",)
    found = [f"servicenow:user:{u}" for u in ids(row.get("user"))]
    found += [f"servicenow:group:{d.groups[g]}" for g in ids(row.get("group")) if g in d.groups]
    found += [f"servicenow:role:{d.roles[r]}" for r in ids(row.get("role")) if r in d.roles]
    other = [k for k in UNMAPPED if ids(row.get(k))]
    conditions = len(found) + sum(len(ids(row.get(k))) for k in UNMAPPED)
    if _true(row.get("match_all")) and conditions > 1:
        return (), (f"user criterion {name!r} matches all of several conditions, which "
                    "access groups cannot express: left out",)
    warnings = tuple(f"user criterion {name!r}: its {k} condition cannot be mapped; those "
                     "readers are left out" for k in other)
    return tuple(found), warnings


def article_access(can: tuple[str, ...], cannot: tuple[str, ...], public: bool, base: str,
                   d: Directory) -> Access:
    """The article's own criteria, else its base's (the caller passes whichever applies)."""
    if cannot:
        return (), ("'cannot read' user criteria cannot be expressed as access groups: "
                    "visible to nobody",)
    if not can:
        return (("public",) if public else (f"servicenow:base:{base}",)), ()
    found: list[str] = []
    warnings: list[str] = []
    for criterion in can:
        principals, said = criterion_principals(criterion, d)
        found += principals
        warnings += said
    if not found:
        warnings.append("no 'can read' user criterion maps to a user, group or role: "
                        "visible to nobody")
    return tuple(dict.fromkeys(found)), tuple(warnings)
