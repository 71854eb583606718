"""Settings load: env over sift.toml over defaults, one-sentence errors, secrets kept secret."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.cli import main
from bot.settings import Settings, build_settings
from rag.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test from no configuration, whatever the developer's shell exports."""
    for name in list(os.environ):
        if name.upper().startswith("SIFT_") or name.upper() == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(name)


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def one_sentence(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message
    assert message.endswith((".", "?"))


def test_defaults_without_any_config() -> None:
    settings = build_settings()
    assert (settings.host, settings.port, settings.data_dir) == ("127.0.0.1", 3978, Path(".sift"))
    assert settings.config is None and not settings.llm_configured


def test_the_sample_declares_every_group_its_documents_are_restricted_to() -> None:
    from bot.settings import SAMPLE_KNOWLEDGE
    from sync.connectors.common.convert import split_front_matter

    named: set[str] = set()
    for path in Path(SAMPLE_KNOWLEDGE).rglob("*.md"):
        named |= set(split_front_matter(path.read_text()).meta.get("access", [])) - {"public"}
    declared = {g.name for g in build_settings().groups}
    assert named and named <= declared, f"undeclared in the sample: {named - declared}"


def test_a_configuration_of_one_s_own_gets_no_sample_groups(tmp_path: Path) -> None:
    config = write_toml(tmp_path / "sift.toml", f"""
[[sources]]
name = "handbook"
kind = "folder"
path = "{tmp_path}"
""")
    assert build_settings(config).groups == []
    own = write_toml(tmp_path / "groups.toml",
                     '[[groups]]\nname = "hr"\nemails = ["a@x.example"]\n')
    assert [g.name for g in build_settings(own).groups] == ["hr"]


def test_bad_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_PORT", "eighty")
    with pytest.raises(ConfigError) as caught:
        build_settings()
    message = caught.value.user_message
    one_sentence(message)
    assert "'port'" in message and "SIFT_PORT" in message and "'eighty'" in message


def test_bad_nested_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_WEAVIATE__HTTP_PORT", "70000")
    with pytest.raises(ConfigError) as caught:
        build_settings()
    one_sentence(caught.value.user_message)
    assert "environment variable SIFT_WEAVIATE__HTTP_PORT" in caught.value.user_message


def test_a_retired_backend_names_what_to_set_instead(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An installation configured for the int8 backend that was dropped is told what to use
    and that its index must be rebuilt, in one sentence, from the environment or the file."""
    monkeypatch.setenv("SIFT_EMBEDDING__BACKEND", "onnx-int8")
    with pytest.raises(ConfigError) as from_env:
        build_settings()
    monkeypatch.delenv("SIFT_EMBEDDING__BACKEND")
    path = write_toml(tmp_path / "sift.toml", '[embedding]\nbackend = "onnx-int8"\n')
    with pytest.raises(ConfigError) as from_file:
        build_settings(path)
    for caught in (from_env, from_file):
        message = caught.value.user_message
        one_sentence(message)
        assert "onnx-int8 was retired" in message
        assert "openvino-int8" in message and "sift sync --rebuild" in message
    assert "environment variable SIFT_EMBEDDING__BACKEND" in from_env.value.user_message
    assert f"'embedding.backend' in {path}" in from_file.value.user_message


def test_bad_toml_value_names_the_file_and_key(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "sift.toml", "[weaviate]\nhttp_port = 70000\n")
    with pytest.raises(ConfigError) as caught:
        build_settings(path)
    message = caught.value.user_message
    one_sentence(message)
    assert f"'weaviate.http_port' in {path}" in message
    assert "70000" in message and "environment variable" not in message


def test_bad_toml_value_in_a_list_names_the_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "sift.toml",
                      '[[sources]]\nname = "has space"\nkind = "folder"\n')
    with pytest.raises(ConfigError) as caught:
        build_settings(path)
    assert f"'sources.0.name' in {path}" in caught.value.user_message


def test_unknown_toml_key_names_the_key_and_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "sift.toml", "[retrieval]\nlimt = 5\n")
    with pytest.raises(ConfigError) as caught:
        build_settings(path)
    one_sentence(caught.value.user_message)
    assert "'retrieval.limt'" in caught.value.user_message
    assert str(path) in caught.value.user_message


def test_plain_anthropic_key_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-plain")
    settings = build_settings()
    assert settings.anthropic_api_key is not None
    assert settings.anthropic_api_key.get_secret_value() == "sk-plain"
    assert settings.llm_configured


def test_sift_anthropic_key_wins_over_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-plain")
    monkeypatch.setenv("SIFT_ANTHROPIC_API_KEY", "sk-sift")
    settings = build_settings()
    assert settings.anthropic_api_key is not None
    assert settings.anthropic_api_key.get_secret_value() == "sk-sift"


def test_env_overrides_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_toml(tmp_path / "sift.toml",
                      'port = 4000\nhost = "0.0.0.0"\n[weaviate]\nhttp_port = 9001\n')
    monkeypatch.setenv("SIFT_PORT", "5000")
    monkeypatch.setenv("SIFT_WEAVIATE__HTTP_PORT", "9002")
    settings = build_settings(path)
    assert settings.port == 5000 and settings.weaviate.http_port == 9002
    assert settings.host == "0.0.0.0"  # not overridden, so the file's value stands


def test_sift_config_selects_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_toml(tmp_path / "chosen.toml", "port = 4100\n")
    monkeypatch.setenv("SIFT_CONFIG", str(path))
    settings = build_settings()
    assert settings.port == 4100 and settings.config == path


def test_explicit_config_wins_over_sift_config(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_CONFIG", str(write_toml(tmp_path / "env.toml", "port = 4100\n")))
    explicit = write_toml(tmp_path / "flag.toml", "port = 4200\n")
    assert build_settings(explicit).port == 4200


def test_cli_config_flag_selects_the_file(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    path = write_toml(tmp_path / "sift.toml",
                      f'data_dir = "{data}"\n[weaviate]\nhttp_port = 18123\n')
    code = main(["--config", str(path), "weaviate", "status", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3  # nothing runs in that data dir
    assert report["http_port"] == 18123 and report["data_dir"] == str(data / "weaviate")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_missing_config_file_is_a_clear_error(how: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere.toml"
    argv = ["weaviate", "stop"]
    if how == "flag":
        argv = ["--config", str(missing), *argv]
    else:
        monkeypatch.setenv("SIFT_CONFIG", str(missing))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"sift: Config file {missing} does not exist."


def test_invalid_toml_is_a_clear_error(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "sift.toml", "port = \n")
    with pytest.raises(ConfigError, match="is not valid TOML") as caught:
        build_settings(path)
    assert str(path) in caught.value.user_message


SECRETS = {
    "SIFT_ANTHROPIC_API_KEY": "sk-ant-secret-1",
    "SIFT_WEAVIATE_API_KEY": "weaviate-secret-2",
    "SIFT_SLACK_BOT_TOKEN": "xoxb-secret-3",
    "SIFT_SLACK_SIGNING_SECRET": "signing-secret-4",
    "SIFT_SLACK_APP_TOKEN": "xapp-secret-5",
    "SIFT_TEAMS_APP_PASSWORD": "teams-secret-6",
    "SIFT_EMBEDDING__VOYAGE_API_KEY": "voyage-secret-7",
}


def test_secrets_are_secretstr_and_never_in_repr(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_toml(tmp_path / "sift.toml",
                      '[[sources]]\nname = "wiki"\nkind = "http"\nurl = "http://x"\n'
                      'token = "source-secret-8"\n')
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = build_settings(path)
    fields = [settings.anthropic_api_key, settings.weaviate_api_key, settings.slack_bot_token,
              settings.slack_signing_secret, settings.slack_app_token,
              settings.teams_app_password, settings.embedding.voyage_api_key,
              settings.sources[0].token]
    assert all(isinstance(f, SecretStr) for f in fields)
    assert {f.get_secret_value() for f in fields if f} == {*SECRETS.values(), "source-secret-8"}
    shown = repr(settings) + str(settings) + settings.model_dump_json()
    for secret in [*SECRETS.values(), "source-secret-8"]:
        assert secret not in shown


def test_settings_read_no_toml_on_their_own(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Only build_settings reads sift.toml (here the one in the working directory)."""
    write_toml(tmp_path / "sift.toml", "port = 4300\n")
    monkeypatch.chdir(tmp_path)
    assert Settings().port == 3978 and build_settings().port == 4300


def test_duplicate_source_names_are_refused_with_one_sentence(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    config = tmp_path / "sift.toml"
    config.write_text('[[sources]]\nname = "kb"\nkind = "folder"\npath = "/a"\n\n'
                      '[[sources]]\nname = "kb"\nkind = "folder"\npath = "/b"\n')
    with pytest.raises(ConfigError) as refused:
        build_settings(config)
    assert refused.value.user_message == (
        f"Setting 'sources' in {config} is invalid: two [[sources]] share the name 'kb'; "
        "give each a different name.")


def test_loaded_settings_are_read_only(tmp_path: Path) -> None:
    """Every section, a surface's and a source's table too: a builder that tried to rewrite
    what it was handed (the console nulling passwords, `serve` its threads) fails here."""
    path = tmp_path / "sift.toml"
    path.write_text('[slack]\nstreaming = true\n\n[[sources]]\nname = "wiki"\nkind = "web"\n'
                    'url = "https://docs.example/"\n', encoding="utf-8")
    settings = build_settings(path)
    web = settings.sources[0].options
    for owner, name, value in ((settings, "workers", 4), (settings.admin, "secure_cookie", True),
                               (settings.slack, "streaming", False), (web, "max_retries", 0)):
        with pytest.raises(ValueError, match="frozen"):
            setattr(owner, name, value)
    assert settings.workers != 4 and settings.slack.streaming and web.max_retries == 3


def test_the_managed_servers_memory_settings_reach_it(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    from bot.app import App

    monkeypatch.setenv("SIFT_WEAVIATE__DISK_ACCESS", "pread")
    monkeypatch.setenv("SIFT_WEAVIATE__MEMORY_LIMIT", "3GiB")
    monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path))
    server = App(build_settings()).managed_weaviate
    assert server is not None
    assert (server.disk_access, server.memory_limit) == ("pread", "3GiB")
    monkeypatch.delenv("SIFT_WEAVIATE__DISK_ACCESS")
    default = App(build_settings()).managed_weaviate
    assert default is not None and default.disk_access == "mmap"
