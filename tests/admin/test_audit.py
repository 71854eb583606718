"""The audit log: every admin action in the console and on the command line leaves who,
when, what and before -> after in the database; the Audit page and `sift audit` show it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import delete

from bot.cli import main
from storage.audit import AuditEvent, AuditLog
from storage.channel_policies import ChannelPolicyRepository
from storage.db import Database
from storage.models import AuditEntry
from tests.admin.conftest import SCRIPT, Console, csrf_of

pytestmark = pytest.mark.usefixtures("clean_audit")


@pytest.fixture
def clean_audit(seeded: Database) -> None:
    with seeded.write() as session:
        session.execute(delete(AuditEntry))


def logged(db: Database) -> list[AuditEvent]:
    return list(reversed(AuditLog(db).since(datetime.now(UTC) - timedelta(hours=1))))


async def test_sign_ins_are_recorded_with_the_address(console: Console) -> None:
    assert (await console.sign_in("wrong guess")).status == 401
    assert (await console.sign_in()).status == 303
    failed, signed_in = logged(console.db)
    assert (failed.action, failed.actor, failed.target) == ("sign_in_failed", "?", "password")
    assert (signed_in.action, signed_in.actor, signed_in.after) == \
        ("sign_in", "admin", {"role": "admin"})
    assert failed.address == signed_in.address == "127.0.0.1"
    assert "wrong guess" not in json.dumps([e.as_json() for e in logged(console.db)])


async def test_policy_edits_record_before_and_after(console: Console) -> None:
    await console.sign_in()
    for label in ("#help", "#help-desk"):
        token = await console.csrf("/admin/channels")
        response = await console.client.post("/admin/channels", allow_redirects=False, data={
            "csrf": token, "platform": "slack", "channel": "C0AUDIT01", "label": label,
            "respond": "questions", "enabled": "on"})
        assert response.status == 303
    token = await console.csrf("/admin/channels")
    await console.client.post("/admin/channels/remove", allow_redirects=False, data={
        "csrf": token, "platform": "slack", "channel": "C0AUDIT01"})
    created, changed, removed = [e for e in logged(console.db) if e.action.startswith("policy")]
    assert (created.action, created.target, created.before) == \
        ("policy_saved", "slack:C0AUDIT01", None)
    assert created.after is not None and created.after["label"] == "#help"
    assert changed.before is not None and changed.before["label"] == "#help"
    assert changed.after is not None and changed.after["label"] == "#help-desk"
    assert (removed.action, removed.after) == ("policy_removed", None)
    assert removed.before is not None and removed.before["label"] == "#help-desk"
    assert {e.actor for e in (created, changed, removed)} == {"admin"}


async def test_overrides_and_started_syncs_are_recorded(console: Console) -> None:
    await console.sign_in()
    for kind in ("hide", "reset"):
        token = await console.csrf("/admin/documents")
        await console.client.post("/admin/documents/override", allow_redirects=False,
                                  data={"csrf": token, "doc_id": "doc-7", "kind": kind})
    token = await console.csrf("/admin/sources")
    await console.client.post("/admin/sources/handbook/sync", allow_redirects=False,
                              data={"csrf": token})
    hidden, reset, synced = [e for e in logged(console.db) if e.action != "sign_in"]
    assert (hidden.action, hidden.target, hidden.before, hidden.after) == \
        ("override", "document doc-7", None, {"kind": "hide"})
    assert reset.before == {"kind": "hide", "set_by": "console"} and reset.after is None
    assert (synced.action, synced.target) == ("sync_started", "source handbook")


async def test_the_audit_page_is_for_admins_and_escapes_what_it_shows(
        console: Console) -> None:
    AuditLog(console.db).record(f"mallory {SCRIPT}", "policy_saved", f"slack:{SCRIPT}",
                                address="203.0.113.7", after={"label": SCRIPT})
    await console.sign_in()
    page = await console.client.get("/admin/audit?window=1d")
    html = await page.text()
    assert page.status == 200 and 'id="audit"' in html
    assert SCRIPT not in html and "203.0.113.7" in html and "policy_saved" in html
    assert 'href="/admin/audit"' in html  # in the admin's navigation
    viewer = await console.client.post("/admin/logout", data={"csrf": csrf_of(html)})
    assert viewer.status == 200
    await console.sign_in("viewer only please")
    assert (await console.client.get("/admin/audit", allow_redirects=False)).status == 403
    assert 'href="/admin/audit"' not in await (await console.client.get("/admin/")).text()


def test_retention_removes_only_old_entries(seeded: Database) -> None:
    now = datetime.now(UTC)
    AuditLog(seeded, clock=lambda: now - timedelta(days=400)).record("admin", "sign_in")
    AuditLog(seeded, clock=lambda: now - timedelta(days=2)).record("admin", "override")
    assert AuditLog(seeded).purge(now - timedelta(days=365)) == 1
    [kept] = AuditLog(seeded).since(now - timedelta(days=1000))
    assert kept.action == "override"


def test_the_command_line_records_and_lists(seeded: Database, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SIFT_DATABASE_URL", str(seeded.engine.url))
    monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["channels", "set", "slack", "C0CLI0001", "--label", "#cli"]) == 0
    assert main(["docs", "hide", "doc-9"]) == 0
    capsys.readouterr()
    assert main(["audit", "--since", "1h", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["action"], e["target"]) for e in lines] == [
        ("override", "document doc-9"), ("policy_saved", "slack:C0CLI0001")]
    assert all(e["actor"].startswith("cli:") and e["address"] == "" for e in lines)
    assert lines[1]["after"]["label"] == "#cli" and lines[1]["before"] is None
    assert main(["audit", "--since", "1h", "--action", "override"]) == 0
    out = capsys.readouterr().out
    assert "document doc-9" in out and "C0CLI0001" not in out
    ChannelPolicyRepository(seeded).remove("slack", "C0CLI0001")


async def test_a_failed_audit_write_is_logged_and_the_person_still_gets_the_sentence(
        console: Console, caplog: pytest.LogCaptureFixture) -> None:
    from bot.admin.console import KEY

    class Broken(AuditLog):
        def record(self, *args: object, **kwargs: object) -> AuditEvent:
            raise RuntimeError("disk I/O error")

    console.app[KEY].audit = Broken(console.db)
    assert (await console.sign_in("wrong guess")).status == 401  # not a 500
    failures = [r for r in caplog.records if r.getMessage().startswith("audit log: could not")]
    assert failures and failures[0].levelname == "ERROR"
    assert "sign_in_failed" in failures[0].getMessage() and failures[0].exc_info
