"""The declared `[[groups]]` and the pure question: which of them does this identity belong to?"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.settings import GroupSettings


@dataclass(frozen=True)
class Identity:
    """What the platforms told us about one person (each part may be unknown: empty)."""

    email: str = ""
    slack_usergroups: frozenset[str] = frozenset()  # handles, without "@"
    entra_object_id: str = ""
    entra_groups: frozenset[str] = frozenset()  # object ids Graph confirmed


def _norm(values: Iterable[str]) -> frozenset[str]:
    return frozenset(v.strip().lstrip("@").casefold() for v in values if v.strip())


@dataclass(frozen=True)
class _Group:
    name: str
    emails: frozenset[str]
    domains: frozenset[str]
    slack_usergroups: frozenset[str]
    entra_groups: frozenset[str]
    entra_members: frozenset[str]
    principals: tuple[str, ...] = ()


def _with_platforms(group: GroupSettings) -> tuple[str, ...]:
    """A group's principals, plus its Entra groups and members as the SharePoint connector
    names them (`entra:group:<object id>`, `entra:user:<object id>`, lower case), so that
    declaring `entra_groups` once covers both Teams askers and SharePoint files; and its
    GitHub teams (lower case, as slugs are), Jira and ServiceNow groups as their connectors
    name them."""
    named = [f"entra:group:{i}" for i in sorted(_norm(group.entra_groups))]
    named += [f"entra:user:{i}" for i in sorted(_norm(group.entra_members))]
    named += [f"github:team:{t}" for t in sorted(_norm(group.github_teams))]
    named += [f"jira:group:{g.strip()}" for g in group.jira_groups if g.strip()]
    named += [f"servicenow:group:{g.strip()}" for g in group.servicenow_groups if g.strip()]
    return tuple(dict.fromkeys((*group.principals, *named)))


class GroupDirectory:
    """Membership by email, email domain, Slack user group, Entra group or Entra object id."""

    def __init__(self, groups: Sequence[GroupSettings]) -> None:
        self._groups = [
            _Group(g.name, _norm(g.emails), _norm(d.lstrip("@") for d in g.domains),
                   _norm(g.slack_usergroups), _norm(g.entra_groups), _norm(g.entra_members),
                   _with_platforms(g))
            for g in groups]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(g.name for g in self._groups)

    @property
    def principals(self) -> frozenset[str]:
        """Every platform principal some group maps (documents carrying one are known)."""
        return frozenset(p for g in self._groups for p in g.principals)

    def with_principals(self, names: Sequence[str]) -> tuple[str, ...]:
        """`names` and the platform principals those groups map, without repeats."""
        mapped = [p for g in self._groups if g.name in names for p in g.principals]
        return tuple(dict.fromkeys((*names, *mapped)))

    @property
    def slack_handles(self) -> frozenset[str]:
        """Every Slack user-group handle some group names (casefolded, without "@")."""
        return frozenset(h for g in self._groups for h in g.slack_usergroups)

    def naming_handle(self, handle: str) -> list[str]:
        return [g.name for g in self._groups if handle in g.slack_usergroups]

    @property
    def entra_group_ids(self) -> frozenset[str]:
        return frozenset(i for g in self._groups for i in g.entra_groups)

    def groups_of(self, who: Identity) -> tuple[str, ...]:
        """The declared groups `who` belongs to, in declaration order."""
        email = who.email.strip().casefold()
        domain = email.rpartition("@")[2] if "@" in email else ""
        handles = _norm(who.slack_usergroups)
        entra = _norm(who.entra_groups)
        oid = who.entra_object_id.strip().casefold()
        return tuple(g.name for g in self._groups if (
            (email and email in g.emails) or (domain and domain in g.domains)
            or not handles.isdisjoint(g.slack_usergroups)
            or not entra.isdisjoint(g.entra_groups) or (oid and oid in g.entra_members)))
