"""The Teams app package: manifest limits, icon sizes and colours, the zip that gets uploaded."""

from __future__ import annotations

import importlib.util
import json
import struct
import zipfile
import zlib
from pathlib import Path
from types import ModuleType

import pytest

from bot.cli import main
from bot.settings import PROJECT_ROOT
from bot.teams.app_package import build, website_url
from bot.teams.inbound import ASK_COMMAND, SAVE_COMMAND

DEPLOY = PROJECT_ROOT / "deploy" / "teams"
APP_ID = "b1f4c6a2-7d0e-4c55-9a3e-2f6d8e1c0a77"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"teams_{name}", DEPLOY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rgba_pixels(png: bytes) -> tuple[int, int, list[tuple[int, int, int, int]]]:
    """Decodes the 8-bit RGBA, unfiltered PNGs icons.py writes."""
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert (depth, colour) == (8, 6)
    data, pos = b"", 8
    while pos < len(png):
        (length,), kind = struct.unpack(">I", png[pos:pos + 4]), png[pos + 4:pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(data)
    stride = width * 4 + 1
    pixels = []
    for y in range(height):
        row = raw[y * stride:(y + 1) * stride]
        assert row[0] == 0
        pixels += [tuple(row[1 + x * 4:5 + x * 4]) for x in range(width)]
    return width, height, pixels  # type: ignore[return-value]


def test_manifest_within_teams_limits() -> None:
    manifest = json.loads((DEPLOY / "manifest.json").read_text())
    assert manifest["manifestVersion"] == "1.22"
    assert len(manifest["name"]["short"]) <= 30 and len(manifest["name"]["full"]) <= 100
    assert len(manifest["description"]["short"]) <= 80
    assert len(manifest["description"]["full"]) <= 4000
    [bot] = manifest["bots"]
    assert set(bot["scopes"]) == {"personal", "team", "groupChat"}
    # auto-answer channels: messages without @Sift reach it only through these consents;
    # a Teams source reads the team's channels, messages and members through them too
    assert {p["name"] for p in manifest["authorization"]["permissions"]["resourceSpecific"]} \
        == {"ChannelMessage.Read.Group", "ChatMessage.Read.Chat", "ChannelSettings.Read.Group",
            "ChannelMember.Read.Group", "TeamMember.Read.Group"}
    assert all(manifest["developer"][k].startswith("https://")
               for k in ("websiteUrl", "privacyUrl", "termsOfUseUrl"))


def test_icons() -> None:
    width, height, pixels = rgba_pixels((DEPLOY / "color.png").read_bytes())
    assert (width, height) == (192, 192)
    assert pixels[96 * 192 + 96][3] == 255  # opaque in the middle
    width, height, pixels = rgba_pixels((DEPLOY / "outline.png").read_bytes())
    assert (width, height) == (32, 32)
    assert all(p[:3] == (255, 255, 255) for p in pixels)  # white, only alpha varies
    assert pixels[0][3] == 0 and any(p[3] == 255 for p in pixels)


def test_icons_are_reproducible(tmp_path: Path) -> None:
    icons = load("icons")
    assert icons.png(32, icons._pixel_outline) == (DEPLOY / "outline.png").read_bytes()


def test_package(tmp_path: Path) -> None:
    out = build(APP_ID.upper(), tmp_path / "sift.zip", website_url("https://kb.example.org/"),
                "1.0.3")
    with zipfile.ZipFile(out) as package:
        assert sorted(package.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(package.read("manifest.json"))
    assert manifest["id"] == APP_ID and manifest["bots"][0]["botId"] == APP_ID
    assert manifest["webApplicationInfo"]["id"] == APP_ID
    assert manifest["developer"]["privacyUrl"] == "https://kb.example.org/privacy"
    assert manifest["version"] == "1.0.3"
    # "Ask Sift about this" and "Save to Sift" on a message: actions of the same bot,
    # answered by their fetchTask
    [extension] = manifest["composeExtensions"]
    assert extension["botId"] == APP_ID
    assert [c["id"] for c in extension["commands"]] == [ASK_COMMAND, SAVE_COMMAND]
    for command in extension["commands"]:
        assert (command["type"], command["context"], command["fetchTask"]) == \
            ("action", ["message"], True)
        assert len(command["title"]) <= 32 and len(command["description"]) <= 128


def package(*args: str) -> int:
    return main(["teams", "package", *args])


def test_the_website_must_be_a_public_https_address(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sift-teams.zip"
    for typed in ("intranet", "http://sift.example.com", "https://"):
        try:
            package("--app-id", APP_ID, "--website", typed, "--out", str(out))
        except SystemExit as exit_:
            assert exit_.code == 2
        else:
            raise AssertionError(f"{typed!r} was accepted")
        assert "https://" in capsys.readouterr().err and not out.exists()
    assert package("--app-id", APP_ID, "--website", "sift.example.com", "--out", str(out)) == 0
    manifest = json.loads(zipfile.ZipFile(out).read("manifest.json"))
    assert manifest["developer"]["privacyUrl"] == "https://sift.example.com/privacy"


def test_without_a_website_the_example_links_are_said(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert package("--app-id", APP_ID, "--out", str(tmp_path / "p.zip")) == 0
    err = capsys.readouterr().err
    assert "example" in err and "--website" in err


def test_the_app_id_comes_from_the_settings_and_a_bad_one_is_one_sentence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_TEAMS_APP_ID", APP_ID)
    out = tmp_path / "from-settings.zip"
    assert package("--out", str(out), "--website", "kb.example.org") == 0
    assert json.loads(zipfile.ZipFile(out).read("manifest.json"))["id"] == APP_ID
    capsys.readouterr()
    assert package("--app-id", "not-a-guid", "--out", str(tmp_path / "bad.zip")) == 2
    err = capsys.readouterr().err
    assert "'not-a-guid' is not an app (client) id" in err and "Traceback" not in err
    monkeypatch.delenv("SIFT_TEAMS_APP_ID")
    assert package("--out", str(tmp_path / "none.zip")) == 2
    assert "--app-id" in capsys.readouterr().err
