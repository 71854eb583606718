"""Who may read a Jira issue: its project's "Browse projects" grants, or its security level."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BROWSE = "BROWSE_PROJECTS"
# Grants that name no fixed people (the reporter, a user picked in a custom field):
# their readers are left out, which narrows access and never widens it.
DYNAMIC = frozenset({"assignee", "reporter", "projectLead", "userCustomField",
                     "groupCustomField", "sd.customer.portal.only", "reporterWithCreate",
                     "assigneeWithCreate"})

Access = tuple[tuple[str, ...], tuple[str, ...]]  # (principals, warnings)


def _holder_principal(project: str, holder: Mapping[str, Any]) -> str | None:
    kind = str(holder.get("type") or "")
    parameter = str(holder.get("parameter") or holder.get("value") or "")
    if kind == "anyone":  # anonymous users: anyone who can reach the site
        return "public"
    if kind == "applicationRole":  # every signed-in user of the product
        return "jira:signed-in"
    if kind == "group" and parameter:
        return f"jira:group:{parameter}"
    if kind == "user" and parameter:
        return f"jira:user:{parameter}"
    if kind == "projectRole":
        role = holder.get("projectRole")
        name = role.get("name") if isinstance(role, dict) else None
        return f"jira:role:{project}:{name or parameter}" if name or parameter else None
    return None


def browse_access(project: str, grants: Sequence[Any]) -> Access:
    """The principals of a permission scheme's Browse projects grants; () when none maps."""
    found: list[str] = []
    skipped: list[str] = []
    for grant in grants:
        if not isinstance(grant, dict) or grant.get("permission") != BROWSE:
            continue
        given = grant.get("holder")
        holder: Mapping[str, Any] = given if isinstance(given, dict) else {}
        principal = _holder_principal(project, holder)
        if principal is None:
            skipped.append(str(holder.get("type") or "?"))
        else:
            found.append(principal)
    if "public" in found:
        return ("public",), ()
    warnings = tuple(f"project {project}: the Browse projects grant to "
                     f"{k} cannot be mapped; those readers are left out"
                     for k in dict.fromkeys(skipped) if k not in DYNAMIC)
    if not found:
        return (), (f"project {project}: no Browse projects grant maps to a group, role or "
                    "user: its issues are visible to nobody", *warnings)
    return tuple(dict.fromkeys(found)), warnings


def configured_access(project: str, setting: Mapping[str, Sequence[str]],
                      why: str) -> Access:
    """`jira.project_access` for a project whose scheme this token cannot read."""
    given = tuple(setting.get(project, ()))
    if given:
        return given, ()
    return (), (f"project {project}: its permission scheme cannot be read ({why}) and "
                f"`jira.project_access` names no readers for it: its issues are visible to "
                "nobody", )


def level_access(level: Any) -> tuple[str, ...] | None:
    """An issue security level restricts the issue to that level's members: one principal
    that `[[groups]]` map. None: the issue has no level."""
    if not isinstance(level, dict) or not level.get("id"):
        return None
    return (f"jira:level:{level['id']}",)
