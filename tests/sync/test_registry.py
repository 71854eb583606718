"""The connector registry: a source's kind picks its settings table and its factory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.settings import build_settings
from rag.errors import ConfigError
from sync.connectors.confluence import ConfluenceConnector
from sync.connectors.folder import FolderConnector
from sync.connectors.http import HttpConnector
from sync.connectors.notion import NotionConnector
from sync.connectors.registry import SPECS
from sync.connectors.web import WebConnector


def load(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = tmp_path / "sift.toml"
    path.write_text(text, encoding="utf-8")
    try:
        build_settings(path)
    except ConfigError as exc:
        return path, exc.user_message
    return path, ""


def test_an_unknown_kind_is_one_sentence_listing_the_known_ones(tmp_path: Path) -> None:
    path, message = load(tmp_path, '[[sources]]\nname = "w"\nkind = "gitlab"\n')
    assert message.startswith(f"Setting 'sources.0.kind' in {path} is invalid (got 'gitlab')")
    assert message.endswith(".") and ". " not in message  # one sentence
    for kind in SPECS:
        assert kind in message


@pytest.mark.parametrize(("table", "expected"), [
    ('[sources.http]\nlist_pat = "/x"\n', "Unknown setting 'sources.0.http.list_pat'"),
    ("[sources.http]\npage_size = 0\n", "Setting 'sources.0.http.page_size'"),
    ('[sources.folder]\npath = "/x"\n', "Unknown setting 'sources.0.folder.path'"),
])
def test_a_kind_table_keeps_extra_forbid_and_names_its_key(tmp_path: Path, table: str,
                                                           expected: str) -> None:
    kind = "folder" if "folder" in table else "http"
    _, message = load(tmp_path, f'[[sources]]\nname = "w"\nkind = "{kind}"\nurl = "http://x"\n'
                      + table)
    assert message.startswith(expected)


def test_another_kinds_table_is_an_unknown_setting(tmp_path: Path) -> None:
    _, message = load(tmp_path, '[[sources]]\nname = "w"\nkind = "folder"\npath = "/x"\n'
                      '[sources.http]\nlist_path = "/a"\n')
    assert message.startswith("Unknown setting 'sources.0.http'")


def test_existing_folder_and_http_tables_build_their_connectors(tmp_path: Path) -> None:
    path = tmp_path / "sift.toml"
    path.write_text(f'[[sources]]\nname = "kb"\nkind = "folder"\npath = "{tmp_path}"\n'
                    'url = "https://files/kb"\n\n[[sources]]\nname = "wiki"\nkind = "http"\n'
                    'url = "http://wiki"\ntoken = "t0k"\n[sources.http]\nlist_path = "/a"\n'
                    'fields = { title = "name" }\n', encoding="utf-8")
    app = App(build_settings(path))
    folder, http = (app.connector(s) for s in app.settings.sources)
    assert isinstance(folder, FolderConnector) and folder.url_base == "https://files/kb"
    assert isinstance(http, HttpConnector)
    assert (http.config.list_path, http.config.token, http.fields["title"]) == ("/a", "t0k",
                                                                                "name")


def test_a_missing_required_setting_names_the_source(tmp_path: Path) -> None:
    path = tmp_path / "sift.toml"
    path.write_text('[[sources]]\nname = "wiki"\nkind = "http"\n', encoding="utf-8")
    app = App(build_settings(path))
    with pytest.raises(ConfigError) as caught:
        app.connector(app.settings.sources[0])
    assert "'wiki'" in caught.value.user_message and "`url`" in caught.value.user_message


def test_platform_tables_build_their_connectors(tmp_path: Path) -> None:
    path = tmp_path / "sift.toml"
    path.write_text(
        '[[sources]]\nname = "wiki"\nkind = "confluence"\nurl = "https://acme.atlassian.net/'
        'wiki"\ntoken = "t"\n[sources.confluence]\nemail = "ana@acme.com"\nspaces = ["ENG"]\n\n'
        '[[sources]]\nname = "notes"\nkind = "notion"\ntoken = "ntn_x"\n\n'
        '[[sources]]\nname = "docs"\nkind = "web"\nurl = "https://docs.acme.com/sitemap.xml"\n'
        '[sources.web]\nprefix = "https://docs.acme.com/guide/"\nmax_pages = 50\n',
        encoding="utf-8")
    app = App(build_settings(path))
    wiki, notes, docs = (app.connector(s) for s in app.settings.sources)
    assert isinstance(wiki, ConfluenceConnector) and wiki.settings.spaces == ["ENG"]
    assert isinstance(notes, NotionConnector) and notes.base == "https://api.notion.com/v1/"
    assert isinstance(docs, WebConnector) and docs.cheap_ids
    assert (docs.prefix, docs.settings.max_pages) == ("https://docs.acme.com/guide/", 50)


def test_a_platform_without_its_token_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sift.toml"
    path.write_text('[[sources]]\nname = "wiki"\nkind = "confluence"\n'
                    'url = "https://acme.atlassian.net/wiki"\n', encoding="utf-8")
    app = App(build_settings(path))
    with pytest.raises(ConfigError) as caught:
        app.connector(app.settings.sources[0])
    assert caught.value.user_message == ("Source 'wiki' is confluence but has no `token` (an "
                                         "API token or PAT).")


# What docs/connectors/*.md and settings files already rely on: (max_retries, timeout_s,
# max_wait_s, backoff_s) per kind. Drive and Graph exports are slow; GitHub's hourly limit
# resets within the hour; a website gets fewer retries.
RETRY_DEFAULTS = {
    "http": (5, 30.0, 60.0, 0.5), "confluence": (5, 30.0, 60.0, 0.5),
    "notion": (5, 30.0, 60.0, 0.5), "zendesk": (5, 30.0, 60.0, 0.5),
    "jira": (5, 30.0, 60.0, 0.5), "servicenow": (5, 30.0, 60.0, 0.5),
    "gdrive": (5, 60.0, 60.0, 0.5), "sharepoint": (5, 60.0, 60.0, 0.5),
    "github": (5, 30.0, 900.0, 0.5), "web": (3, 30.0, 60.0, 0.5),
    "teams": (5, 60.0, 60.0, 0.5)}


@pytest.mark.parametrize("kind", sorted(RETRY_DEFAULTS))
def test_each_http_kind_takes_the_four_retry_keys_with_its_defaults(kind: str) -> None:
    model = SPECS[kind].settings
    fields = model.model_fields
    assert tuple(fields[k].default for k in (
        "max_retries", "timeout_s", "max_wait_s", "backoff_s")) == RETRY_DEFAULTS[kind]
    table = {"max_retries": 1, "timeout_s": 2.0, "max_wait_s": 3.0, "backoff_s": 0.25}
    assert {k: getattr(model(**table), k) for k in table} == table


def test_the_kinds_without_the_retry_keys_are_the_ones_without_an_http_api() -> None:
    assert {k for k, s in SPECS.items() if "max_retries" not in s.settings.model_fields} == {
        "folder", "slack"}  # a directory; Slack's retries are slack_sdk's handlers
