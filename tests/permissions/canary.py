"""Canary documents: one unique marker per access rule, all about the same thing, so that
every question retrieves every document its asker may see (and only those)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

PUB, HR, FIN, BOTH = "CANARY-PUB-K7Q1", "CANARY-HR-M4K2", "CANARY-FIN-Z9X3", "CANARY-BOTH-P5W8"
SECOPS, TYPO, EMPTY = "CANARY-SECOPS-R2D6", "CANARY-TYPO-J3N4", "CANARY-EMPTY-H8L0"
ALL = (PUB, HR, FIN, BOTH, SECOPS, TYPO, EMPTY)
QUESTION = "What is the budget code for the team offsite?"
HR_EMAIL, FIN_EMAIL, STRANGER = "hana@acme.example", "fay@finance.acme.example", "eve@x.example"

# marker -> (file, front-matter access line)
DOCUMENTS = {
    PUB: ("public.md", "access: [public]"),
    HR: ("hr.md", "access: [hr]"),
    FIN: ("finance.md", "access: [finance]"),
    BOTH: ("both.md", "access: [hr, finance]"),
    SECOPS: ("secops.md", "access: [secops]"),  # a group nobody declared
    TYPO: ("typo.md", "acess: [public]"),  # misspelt: nobody until fixed
    EMPTY: ("empty.md", "access: []"),  # empty: nobody until fixed
}
GROUPS_TOML = f"""
[[groups]]
name = "hr"
emails = ["{HR_EMAIL}"]

[[groups]]
name = "finance"
domains = ["finance.acme.example"]
"""


def write_canaries(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for marker, (name, access) in DOCUMENTS.items():
        body = (f"# Offsite budget code {marker}\n\nThe budget code for the team offsite is "
                f"{marker}. Book the offsite venue and travel with budget code {marker}.\n")
        (root / name).write_text(f"---\ntitle: Offsite budget code {marker}\n{access}\n---\n\n"
                                 + body)


def markers_in(text: str) -> set[str]:
    return set(re.findall(r"CANARY-[A-Z]+-[A-Z0-9]{4}", text)) & set(ALL)


def visible(*groups: str) -> set[str]:
    """The markers a reader holding `groups` (plus public) may see: the rule, written out."""
    rules = {PUB: {"public"}, HR: {"hr"}, FIN: {"finance"}, BOTH: {"hr", "finance"},
             SECOPS: {"secops"}, TYPO: set(), EMPTY: set()}
    held = {"public", *groups}
    return {m for m, allowed in rules.items() if allowed & held}


def param_id(value: Any) -> str:
    """A test id for a parameter. A set's own order changes with each process's hash seed, and
    parallel workers (pytest-xdist) must all collect the same ids: so sets are sorted."""
    return str(sorted(value)) if isinstance(value, set | frozenset) else str(value)
