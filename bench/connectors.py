"""Listing + conversion throughput of each connector against its local fake (pages/s).

Run:  .venv/bin/python -m bench.connectors [--pages 300] [--rounds 2]

Each connector reads the same number of realistic pages (headings, a table, code, lists)
from its fake over loopback HTTP: `documents(None)` is a full pass (listing, every request a
page needs, conversion to Markdown), `list_ids()` the id listing a full pass prunes with.
Conversion alone is timed on the same bodies, so the rest of a pass is HTTP and JSON: the
column `convert share` says which dominates. Rates are for the connector alone; Notion's
real 3 requests/s (paced by the connector, disabled here) caps it at 3 / requests per page.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.common.convert import html_to_markdown, split_front_matter
from sync.connectors.common.files import file_to_markdown
from sync.connectors.confluence import ConfluenceConnector, ConfluenceSettings
from sync.connectors.confluence_storage import storage_to_markdown
from sync.connectors.gdrive import GDriveSettings
from sync.connectors.gdrive import build as build_gdrive
from sync.connectors.github import GitHubSettings
from sync.connectors.github import build as build_github
from sync.connectors.jira import JiraConnector, JiraSettings
from sync.connectors.jira_adf import adf_to_markdown
from sync.connectors.notion import NotionConnector, NotionSettings
from sync.connectors.notion_blocks import blocks_to_markdown
from sync.connectors.servicenow import ServiceNowConnector, ServiceNowSettings
from sync.connectors.sharepoint import SharePointConnector, SharePointSettings
from sync.connectors.slack import SlackConnector, SlackSettings
from sync.connectors.slack_text import to_markdown
from sync.connectors.teams import TeamsConnector, TeamsSettings
from sync.connectors.teams_api import message as teams_message
from sync.connectors.teams_text import to_markdown as teams_markdown
from sync.connectors.web import WebConnector, WebSettings
from sync.connectors.web_pages import extract
from sync.connectors.zendesk import ZendeskConnector, ZendeskSettings
from tests.fakes.confluence_server import EMAIL, TOKEN, FakeConfluence, FakePage
from tests.fakes.gdrive_server import DOC, DriveFile, FakeDrive, permission
from tests.fakes.github_server import TOKEN as GITHUB_TOKEN
from tests.fakes.github_server import FakeDiscussion, FakeGitHub
from tests.fakes.graph_server import CLIENT_ID, TENANT
from tests.fakes.graph_server import SECRET as APP_SECRET
from tests.fakes.jira_server import EMAIL as JIRA_EMAIL
from tests.fakes.jira_server import PAT as JIRA_PAT
from tests.fakes.jira_server import TOKEN as JIRA_TOKEN
from tests.fakes.jira_server import FakeComment, FakeIssue, FakeJira, grant, render
from tests.fakes.notion_server import SECRET, FakeNotion, NotionPage, block, text
from tests.fakes.servicenow_server import PASSWORD as SNOW_PASSWORD
from tests.fakes.servicenow_server import USER as SNOW_USER
from tests.fakes.servicenow_server import FakeServiceNow
from tests.fakes.sharepoint_server import FakeFile, FakeSharePoint, org_link
from tests.fakes.slack_payloads import BOT_TOKEN as SLACK_TOKEN
from tests.fakes.slack_server import FakeSlack
from tests.fakes.teams_graph import FakeTeamsGraph
from tests.fakes.tls import local_ca
from tests.fakes.web_site import FakeSite, SitePage
from tests.fakes.zendesk_server import EMAIL as ZENDESK_EMAIL
from tests.fakes.zendesk_server import TOKEN as ZENDESK_TOKEN
from tests.fakes.zendesk_server import FakeArticle, FakeZendesk
from tests.sync.test_convert_files import docx  # the smallest valid .docx writer

PROSE = ("The deployment pipeline builds the image, runs the integration suite and promotes "
         "the release to staging before anyone approves production. ")


def storage(i: int) -> str:
    rows = "".join(f"<tr><td>svc{j}</td><td>team{j}</td></tr>" for j in range(8))
    return (f"<h1>Runbook {i}</h1>" + f"<p>{PROSE * 6}</p>" * 4
            + '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash'
            "</ac:parameter><ac:plain-text-body><![CDATA[make deploy ENV=prod]]>"
            "</ac:plain-text-body></ac:structured-macro>"
            '<ac:structured-macro ac:name="info"><ac:rich-text-body><p>Ask in #ops.</p>'
            f"</ac:rich-text-body></ac:structured-macro><table><tbody>{rows}</tbody></table>")


def notion_blocks(i: int) -> list[dict[str, Any]]:
    cells = [block(f"r{i}-{j}", "table_row", cells=[text(f"svc{j}"), text(f"team{j}")])
             for j in range(8)]
    return ([block(f"h{i}", "heading_1", rich_text=text(f"Runbook {i}"))]
            + [block(f"p{i}-{j}", "paragraph", rich_text=text(PROSE * 6)) for j in range(4)]
            + [block(f"c{i}", "code", rich_text=text("make deploy ENV=prod"), language="bash"),
               block(f"l{i}", "bulleted_list_item", [block(f"l{i}a", "to_do", rich_text=text(
                   "check"), checked=False)], rich_text=text("Steps")),
               block(f"t{i}", "table", cells, table_width=2, has_column_header=True)])


async def timed(run: Callable[[Any], Awaitable[int]], connector: Any) -> tuple[int, float]:
    started = time.perf_counter()
    count = await run(connector)
    return count, time.perf_counter() - started


async def full(connector: Any) -> int:
    return sum([1 async for d in connector.documents(None) if isinstance(d, SourceDocument)])


async def ids(connector: Any) -> int:
    """On a fresh connector: a crawl remembers the URLs its last full pass walked."""
    return len(await type(connector)(connector.source, connector.settings).list_ids())


def report(name: str, pages: int, read: float, listed: float, convert: float) -> None:
    print(f"{name:<22} {pages / read:>9.1f} {pages / listed:>9.1f} {pages / convert:>9.1f}"
          f" {convert / read:>8.0%}")


async def confluence(pages: int, deployment: str) -> tuple[Any, Callable[[], object], Any]:
    server = FakeConfluence()
    for i in range(pages):
        server.put(FakePage(str(1000 + i), "ENG", f"Runbook {i}", storage(i), labels=["ops"]))
    await server.start()
    cloud = deployment == "cloud"
    source = SourceConfig("wiki", url=server.url + ("/wiki" if cloud else ""), token=TOKEN)
    conn = ConfluenceConnector(source, ConfluenceSettings(
        deployment=deployment, email=EMAIL if cloud else "", spaces=["ENG"], page_size=100))
    return conn, lambda: [storage_to_markdown(storage(i)) for i in range(pages)], server


async def notion(pages: int) -> tuple[Any, Callable[[], object], Any]:
    server = FakeNotion()
    for i in range(pages):
        server.pages[f"p{i}"] = NotionPage(f"p{i}", f"Runbook {i}", notion_blocks(i))
    await server.start()
    conn = NotionConnector(SourceConfig("notes", url=server.url, token=SECRET),
                           NotionSettings(requests_per_second=10_000))

    def convert() -> None:
        for i in range(pages):
            tree = {f"l{i}": notion_blocks(i)[6]["_children"], f"t{i}": notion_blocks(i)[7][
                "_children"]}
            blocks_to_markdown(notion_blocks(i), tree)
    return conn, convert, server


async def web(pages: int, start: str) -> tuple[Any, Callable[[], object], Any]:
    server = FakeSite()
    server.robots = ""
    for i in range(pages):
        more = (f"/docs/p{i + 1}",) if i + 1 < pages else ()
        server.pages[f"/docs/p{i}"] = SitePage(f"Runbook {i}", PROSE * 24, more)
    server.pages["/docs/"] = SitePage("Docs", PROSE, ("/docs/p0",))
    await server.start()
    conn = WebConnector(SourceConfig("docs", url=server.url + start),
                        WebSettings(prefix=f"{server.url}/docs/", delay_s=0,
                                    max_pages=pages + 1))
    bodies = [p.html() for p in server.pages.values()]
    return conn, lambda: [extract(b) for b in bodies], server


def word(i: int) -> bytes:
    return docx([f"Runbook {i}", *[PROSE * 6] * 4, "make deploy ENV=prod"])


async def sharepoint(pages: int) -> tuple[Any, Callable[[], object], Any]:
    server = FakeSharePoint()
    server.sites["site-1"] = ["b!lib"]
    for i in range(pages):
        server.put("b!lib", FakeFile(f"{1000 + i}", f"Runbook {i}.docx", word(i), [org_link()]))
    await server.start()
    conn = SharePointConnector(SourceConfig("sp", url=server.graph_url, token=APP_SECRET),
                               SharePointSettings(tenant_id=TENANT, client_id=CLIENT_ID,
                                                  authority=server.login_url,
                                                  sites=["site-1"], pages=False))
    return conn, lambda: [file_to_markdown(word(i), "a.docx") for i in range(pages)], server


async def gdrive(pages: int) -> tuple[Any, Callable[[], object], Any]:
    server = FakeDrive()
    for i in range(pages):
        server.put(DriveFile(f"d{i}", f"Runbook {i}", DOC, storage(i).encode(),
                             [permission("domain", "acme.com")]))
    await server.start()
    key = server.key_file(Path(tempfile.mkdtemp(prefix="sift-bench-")))
    conn = build_gdrive(SourceConfig("gd", url=server.url), GDriveSettings(key_file=key))
    return conn, lambda: [html_to_markdown(storage(i)) for i in range(pages)], server


async def zendesk(pages: int) -> tuple[Any, Callable[[], object], Any]:
    server = FakeZendesk()
    server.categories, server.sections = {1: "Operations"}, {10: ("Runbooks", 1)}
    for i in range(pages):
        server.put(FakeArticle(i + 1, 10, f"Runbook {i}", article_html(i), labels=["ops"]))
    await server.start()
    conn = ZendeskConnector(SourceConfig("help", url=server.url, token=ZENDESK_TOKEN),
                            ZendeskSettings(email=ZENDESK_EMAIL))
    return conn, lambda: [html_to_markdown(article_html(i)) for i in range(pages)], server


def adf_doc(i: int) -> dict[str, Any]:
    """An issue description: a heading, paragraphs, a code block, a list, a table."""
    def para(words: str) -> dict[str, Any]:
        return {"type": "paragraph", "content": [{"type": "text", "text": words}]}
    cells = [{"type": "tableRow", "content": [{"type": "tableCell", "content": [para(
        f"svc{j}")]}, {"type": "tableCell", "content": [para(f"team{j}")]}]} for j in range(8)]
    return {"type": "doc", "version": 1, "content": [
        {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text",
                                                                "text": f"Runbook {i}"}]},
        *[para(PROSE * 6) for _ in range(4)],
        {"type": "codeBlock", "attrs": {"language": "bash"}, "content": [
            {"type": "text", "text": "make deploy ENV=prod"}]},
        {"type": "bulletList", "content": [{"type": "listItem", "content": [para(
            "Ask in #ops.")]}]},
        {"type": "table", "content": cells}]}


def wiki_markup(i: int) -> str:
    rows = "\n".join(f"|svc{j}|team{j}|" for j in range(8))
    return (f"h2. Runbook {i}\n\n" + "\n\n".join([PROSE * 6] * 4)
            + "\n\n{code:bash}\nmake deploy ENV=prod\n{code}\n\n* Ask in #ops.\n\n"
            + "||service||team||\n" + rows)


async def jira(pages: int, deployment: str) -> tuple[Any, Callable[[], object], Any]:
    server = FakeJira(deployment)
    server.schemes["OPS"] = [grant("group", "ops")]
    cloud = deployment == "cloud"
    for i in range(pages):
        body = adf_doc(i) if cloud else wiki_markup(i)
        server.put(FakeIssue(f"OPS-{i + 1}", f"Runbook {i}", body, labels=["ops"],
                             comments=[FakeComment(body if cloud else "Done, see above.")]))
    await server.start()
    conn = JiraConnector(SourceConfig("tickets", url=server.url, token=JIRA_TOKEN if cloud
                                      else JIRA_PAT),
                         JiraSettings(deployment=deployment, email=JIRA_EMAIL if cloud else "",
                                      projects=["OPS"]))
    convert: Callable[[], object] = (
        (lambda: [adf_to_markdown(adf_doc(i)) for i in range(pages)]) if cloud else
        (lambda: [html_to_markdown(render(wiki_markup(i))) for i in range(pages)]))
    return conn, convert, server


def markdown_page(i: int) -> str:
    rows = "\n".join(f"| svc{j} | team{j} |" for j in range(8))
    return (f"# Runbook {i}\n\n" + "\n\n".join([PROSE * 6] * 4)
            + "\n\n```bash\nmake deploy ENV=prod\n```\n\n- Ask in #ops.\n\n"
            + "| service | team |\n| --- | --- |\n" + rows + "\n")


async def github(pages: int) -> tuple[Any, Callable[[], object], Any]:
    """Nine files for each Discussion: a documentation folder, with questions beside it."""
    server = FakeGitHub()
    repo = server.repo("acme/handbook", {f"docs/runbook-{i}.md": markdown_page(i)
                                         for i in range(pages - pages // 10)})
    for n in range(pages // 10):
        repo.discussions[n + 1] = FakeDiscussion(n + 1, f"Question {n}", PROSE * 6,
                                                 answer=PROSE * 3)
    await server.start()
    conn = build_github(SourceConfig("code", url=server.url, token=GITHUB_TOKEN),
                        GitHubSettings(repos=["acme/handbook"]))
    return conn, lambda: [split_front_matter(markdown_page(i)) for i in range(pages)], server


async def servicenow(pages: int) -> tuple[Any, Callable[[], object], Any]:
    server = FakeServiceNow()
    base = server.base("IT")
    category = server.category("Runbooks", base)
    desk = server.record("sys_user_group", "ops", name="Operations")
    criterion = server.criterion("Operations", group=desk)
    for i in range(pages):
        server.article(f"KB{i:07d}", f"Runbook {i}", article_html(i), base, category,
                       can=criterion)
    await server.start()
    conn = ServiceNowConnector(SourceConfig("kb", url=server.url, token=SNOW_PASSWORD),
                               ServiceNowSettings(username=SNOW_USER, bases=["IT"]))
    return conn, lambda: [html_to_markdown(article_html(i)) for i in range(pages)], server


def article_html(i: int) -> str:
    rows = "".join(f"<tr><td>svc{j}</td><td>team{j}</td></tr>" for j in range(8))
    return (f"<h2>Runbook {i}</h2>" + f"<p>{PROSE * 6}</p>" * 4
            + "<pre><code>make deploy ENV=prod</code></pre>"
            + f"<ul><li>Ask in #ops.</li></ul><table><tbody>{rows}</tbody></table>")


async def slack(pages: int) -> tuple[Any, Callable[[], object], Any]:
    """A thread per page: a question and three replies with mentions, a link and code."""
    server = FakeSlack()
    server.add_user("U0ANA", "ana@acme.example", "ana")
    server.add_channel("C0OPS", "ops", members=["U0ANA"])
    texts = []
    for i in range(pages):
        root = f"1767000000.{i * 10 + 1:06d}"
        server.add_message("C0OPS", "U0ANA", f"Runbook {i}: how do we deploy? {PROSE}", root)
        for j in range(3):
            text = (f"<@U0ANA> see <https://wiki.example/{i}|runbook {i}> in <#C0OPS>: "
                    f"{PROSE * 2}```make deploy ENV=prod```")
            texts.append(text)
            server.add_message("C0OPS", "U0ANA", text, f"1767000000.{i * 10 + 2 + j:06d}", root)
    await server.start()
    conn = SlackConnector(SourceConfig("chat", url=server.api_url, token=SLACK_TOKEN),
                          # Sift's own speed: Slack's tier pacing would measure Slack's.
                          SlackSettings(channels=["C0OPS"], paced=False))
    return conn, lambda: [to_markdown(t, {"U0ANA": "ana"}, {"C0OPS": "ops"}) for t in texts], (
        server)


async def teams(pages: int) -> tuple[Any, Callable[[], object], Any]:
    """A thread per page, as for Slack: a question and three HTML replies with a mention, a
    link and code, through the channel messages delta and each thread's replies."""
    server = FakeTeamsGraph()
    server.add_user("u-ana", "Ana Lopez", "ana@acme.example")
    server.add_team("team-ops", "Ops", ["u-ana"])
    server.add_channel("team-ops", "19:ops@thread.tacv2", "ops")
    for i in range(pages):
        root = server.post("team-ops", "19:ops@thread.tacv2", "u-ana",
                           f"<p>Runbook {i}: how do we deploy? {PROSE}</p>")
        for _ in range(3):
            server.post("team-ops", "19:ops@thread.tacv2", "u-ana",
                        f'<p><at id="0">Ana Lopez</at> see <a href="https://wiki.example/{i}">'
                        f"runbook {i}</a>: {PROSE * 2}</p><pre><code>make deploy ENV=prod"
                        "</code></pre>", reply_to=root, mentions=["u-ana"])
    await server.start()
    conn = TeamsConnector(SourceConfig("chat", url=server.graph_url, token=APP_SECRET),
                          TeamsSettings(tenant_id=TENANT, client_id=CLIENT_ID,
                                        authority=server.login_url, teams=["team-ops"]))
    bodies = [teams_message(r) for c in server.teams["team-ops"].channels.values()
              for replies in c.replies.values() for r in replies]
    return conn, lambda: [teams_markdown(m) for m in bodies], server


async def main(pages: int, rounds: int, only: str = "") -> None:
    cases: list[tuple[str, Callable[[], Awaitable[tuple[Any, Callable[[], object], Any]]]]] = [
        ("confluence cloud", lambda: confluence(pages, "cloud")),
        ("confluence datacenter", lambda: confluence(pages, "datacenter")),
        ("notion", lambda: notion(pages)), ("web sitemap", lambda: web(pages, "/sitemap.xml")),
        ("web crawl", lambda: web(pages, "/docs/")), ("zendesk", lambda: zendesk(pages)),
        ("sharepoint (docx)", lambda: sharepoint(pages)),
        ("gdrive (docs export)", lambda: gdrive(pages)),
        ("jira cloud (adf)", lambda: jira(pages, "cloud")),
        ("jira datacenter (wiki)", lambda: jira(pages, "datacenter")),
        ("github (files+q&a)", lambda: github(pages)),
        ("servicenow", lambda: servicenow(pages)),
        ("slack (threads)", lambda: slack(pages)), ("teams (threads)", lambda: teams(pages))]
    cases = [c for c in cases if only in c[0]]
    print(f"{pages} pages per connector, best of {rounds} rounds (pages/s)")
    print(f"{'connector':<22} {'full pass':>9} {'id list':>9} {'convert':>9} {'convert share':>8}")
    for name, make in cases:
        conn, convert, server = await make()
        try:
            best = [float("inf")] * 3
            for _ in range(rounds):
                count, read = await timed(full, conn)
                _, listed = await timed(ids, conn)
                started = time.perf_counter()
                convert()
                best = [min(best[0], read), min(best[1], listed),
                        min(best[2], time.perf_counter() - started)]
            report(name, count, *best)
        finally:
            await server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300, help="pages per connector")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; the best one counts")
    parser.add_argument("--only", default="", help="the cases whose name holds this")
    args = parser.parse_args()
    # The fake Entra speaks HTTPS (msal accepts nothing else): trust its test CA, as pytest does.
    os.environ["REQUESTS_CA_BUNDLE"] = str(local_ca().bundle)
    asyncio.run(main(args.pages, args.rounds, args.only))
