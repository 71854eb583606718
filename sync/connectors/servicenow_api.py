"""ServiceNow reads through the Table API: records of one table by encoded query, page by page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from sync.connectors.common.http_client import JsonClient, json_field


def any_of(field: str, values: Iterable[str]) -> str:
    """An encoded query's `fieldINa,b`: values may not hold the separators ^ and ,."""
    clean = [v for v in values if v and "^" not in v and "," not in v]
    return f"{field}IN{','.join(clean)}"


class TableApi:
    """`/api/now/table/<table>`: `sysparm_query` filters and orders, `sysparm_fields` keeps
    the answer small, offset paging until a short page."""

    def __init__(self, api: JsonClient, page_size: int, label: str) -> None:
        self.api, self.page_size, self.label = api, page_size, label

    async def rows(self, table: str, query: str, fields: str) -> AsyncIterator[dict[str, Any]]:
        offset = 0
        while True:
            response = await self.api.get(f"api/now/table/{table}", {
                "sysparm_query": query, "sysparm_fields": fields,
                "sysparm_limit": self.page_size, "sysparm_offset": offset,
                "sysparm_display_value": "false", "sysparm_exclude_reference_link": "true",
                "sysparm_no_count": "true"})
            rows = json_field(response, "result", list, self.label)
            for row in rows:
                if isinstance(row, dict):
                    yield row
            if len(rows) < self.page_size:
                return
            offset += len(rows)

    async def by_id(self, table: str, ids: Iterable[str], fields: str) -> dict[str, dict[str, Any]]:
        """Records by sys_id (user criteria, groups, roles), in pages of a hundred ids."""
        wanted = sorted(set(ids))
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(wanted), 100):
            async for row in self.rows(table, any_of("sys_id", wanted[start:start + 100]),
                                       fields):
                found[str(row.get("sys_id"))] = row
        return found
