"""A fake ServiceNow instance: the Table API (`/api/now/table/<table>`) over a few knowledge
tables, records shaped as the Table API returns them with `sysparm_exclude_reference_link`
(every value a string, references as sys_ids, lists comma-separated), Basic auth or an OAuth
client (`/oauth_token.do`, client credentials).

Encoded queries understood: `f=v`, `fINa,b`, `fRELATIVEGE@minute@ago@N`, `ORDERBYf`, `^`."""

from __future__ import annotations

import base64
import hashlib
import re
from collections import deque
from datetime import UTC, datetime, timedelta

from aiohttp import web

from tests.fakes.http import LocalServer
from tests.fakes.platform_server import Fault

USER, PASSWORD = "sift.integration", "snow-password-8"
CLIENT_ID, CLIENT_SECRET = "3e57bb02663102004d010ee8f561307a", "snow-client-secret-2"
STAMP = "%Y-%m-%d %H:%M:%S"


def sys_id(name: str) -> str:
    """A stable 32-hex sys_id for a readable test name."""
    return hashlib.md5(name.encode()).hexdigest()


class FakeServiceNow(LocalServer):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, dict[str, str]]] = {t: {} for t in (
            "kb_knowledge", "kb_knowledge_base", "kb_category", "user_criteria",
            "sys_user_group", "sys_user_role", "kb_uc_can_read_mtom",
            "kb_uc_cannot_read_mtom")}
        self.tokens: set[str] = set()
        self.faults: deque[Fault] = deque()
        self.requests: list[str] = []
        self._clock = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        self.app.router.add_get("/api/now/table/{table}", self._table)
        self.app.router.add_post("/oauth_token.do", self._token)

    # --- building the instance --------------------------------------------------------------

    def record(self, table: str, key_name: str, **fields: str) -> str:
        key = sys_id(f"{table}:{key_name}")
        self.tables[table][key] = {"sys_id": key, **fields}
        return key

    def base(self, title: str) -> str:
        return self.record("kb_knowledge_base", title, title=title, active="true")

    def category(self, label: str, base: str, parent: str = "") -> str:
        return self.record("kb_category", label, label=label, kb_knowledge_base=base,
                           parent_id=parent or base, active="true")

    def criterion(self, name: str, **conditions: str) -> str:
        fields = {"name": name, "active": "true", "match_all": "false", "advanced": "false",
                  "user": "", "group": "", "role": "", "department": "", "company": "",
                  "location": "", "script": ""}
        return self.record("user_criteria", name, **(fields | conditions))

    def article(self, number: str, title: str, text: str | None, base: str, category: str = "",
                state: str = "published", can: str = "", cannot: str = "") -> str:
        self._clock += timedelta(minutes=1)
        fields = {"number": number, "short_description": title, "kb_knowledge_base": base,
                  "kb_category": category, "workflow_state": state,
                  "sys_updated_on": self._clock.strftime(STAMP), "published": "2026-01-02",
                  "author.name": "Fred Luddy", "can_read_user_criteria": can,
                  "cannot_read_user_criteria": cannot, "sys_class_name": "kb_knowledge",
                  "valid_to": "2100-01-01", "active": "true"}
        key = self.record("kb_knowledge", number, **fields)
        if text is not None:
            self.tables["kb_knowledge"][key]["text"] = text
        return key

    def change(self, number: str, **fields: str) -> None:
        row = self.tables["kb_knowledge"][sys_id(f"kb_knowledge:{number}")]
        row.update(fields, sys_updated_on=datetime.now(UTC).strftime(STAMP))

    # --- serving ------------------------------------------------------------------------------

    def _gate(self, request: web.Request) -> web.Response | None:
        self.requests.append(request.path_qs)
        given = request.headers.get("Authorization", "")
        basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if given != basic and given.removeprefix("Bearer ") not in self.tokens:
            return web.json_response({"error": {"message": "User Not Authenticated",
                                                "detail": "Required to provide Auth "
                                                "information"}, "status": "failure"},
                                     status=401)
        for fault in list(self.faults):
            if request.path.startswith(fault.path):
                self.faults.remove(fault)
                return web.Response(status=fault.status, text=fault.body, headers=fault.headers,
                                    content_type="application/json")
        return None

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if (form.get("grant_type"), form.get("client_id"), form.get("client_secret")) != (
                "client_credentials", CLIENT_ID, CLIENT_SECRET):
            return web.json_response({"error_description": "access_denied",
                                      "error": "server_error"}, status=401)
        token = f"snow-access-{len(self.tokens)}"
        self.tokens.add(token)
        return web.json_response({"access_token": token, "scope": "useraccount",
                                  "token_type": "Bearer", "expires_in": 1799})

    async def _table(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        table = request.match_info["table"]
        if table not in self.tables:
            return web.json_response({"error": {"message": "Invalid table " + table,
                                                "detail": None}, "status": "failure"},
                                     status=400)
        rows = _filtered(list(self.tables[table].values()),
                         request.query.get("sysparm_query", ""))
        offset = int(request.query.get("sysparm_offset", "0"))
        limit = int(request.query.get("sysparm_limit", "10000"))
        wanted = [f for f in request.query.get("sysparm_fields", "").split(",") if f]
        page = [{f: r.get(f, "") for f in wanted} if wanted else r
                for r in rows[offset:offset + limit]]
        headers = {"X-Total-Count": str(len(rows))}
        if offset + limit < len(rows):
            headers["Link"] = (f'<{self.url}{request.path}?sysparm_offset={offset + limit}'
                               f'&sysparm_limit={limit}>;rel="next"')
        return web.json_response({"result": page}, headers=headers)


def _filtered(rows: list[dict[str, str]], query: str) -> list[dict[str, str]]:
    order = ""
    for term in (t for t in query.split("^") if t):
        if term.startswith("ORDERBY"):
            order = term[len("ORDERBY"):]
        elif found := re.fullmatch(r"(\w+)RELATIVEGE@minute@ago@(\d+)", term):
            cutoff = (datetime.now(UTC) - timedelta(minutes=int(found.group(2)))).strftime(STAMP)
            rows = [r for r in rows if r.get(found.group(1), "") >= cutoff]
        elif found := re.fullmatch(r"([\w.]+)IN(.*)", term):
            allowed = set(found.group(2).split(","))
            rows = [r for r in rows if r.get(found.group(1)) in allowed]
        elif "=" in term:
            field, _, value = term.partition("=")
            rows = [r for r in rows if r.get(field) == value]
        else:
            raise AssertionError(f"the fake does not understand {term!r}")
    return sorted(rows, key=lambda r: r.get(order, "")) if order else rows

