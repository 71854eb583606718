"""Weaviate's module registry rewritten without the modules Sift never enables."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.weaviate_source import REGISTRY_SOURCE, module_tree
from weaviate_server.slim import LEFT_OUT, SlimmingError, module_constants, slim_registry


def test_dropped_modules_become_their_names_and_a_warning(tmp_path: Path) -> None:
    slimmed, dropped = slim_registry(REGISTRY_SOURCE, module_tree(tmp_path))
    assert dropped == ["generative-google", "text2vec-openai"]
    assert "modules/text2vec-openai" not in slimmed
    assert "modules/generative-google" not in slimmed
    assert "modopenai" not in slimmed and "modgenerativegoogle" not in slimmed
    # The default lists and the "is it enabled?" checks keep the very names.
    assert '\t\t"text2vec-openai",\n' in slimmed
    assert 'enabledModules["generative-palm"]' in slimmed
    assert 'enabledModules["text2vec-openai"]; ok {' in slimmed
    # Enabling a module this build lacks logs a warning naming it instead of registering it.
    assert slimmed.count(LEFT_OUT) == 2
    assert (f'appState.Logger.WithField("module", "generative-google").Warn("{LEFT_OUT}")'
            in slimmed)


def test_kept_modules_and_other_imports_are_left_alone(tmp_path: Path) -> None:
    slimmed, _ = slim_registry(REGISTRY_SOURCE, module_tree(tmp_path))
    assert '\tmodstgfs "github.com/weaviate/weaviate/modules/backup-filesystem"\n' in slimmed
    assert "appState.Modules.Register(modstgfs.New())" in slimmed
    assert '\t"github.com/weaviate/weaviate/usecases/modules"\n' in slimmed
    assert '\t"strings"\n' in slimmed


def test_an_unknown_use_of_a_dropped_module_refuses_the_rewrite(tmp_path: Path) -> None:
    source = REGISTRY_SOURCE.replace("\treturn nil\n}", "\tmodopenai.Configure()\n\treturn nil\n}")
    with pytest.raises(SlimmingError, match=r"modopenai\.Configure"):
        slim_registry(source, module_tree(tmp_path, source))


def test_a_registry_without_modules_refuses_the_rewrite(tmp_path: Path) -> None:
    source = "package rest\n\nimport (\n\t\"strings\"\n)\n"
    with pytest.raises(SlimmingError, match="imports no module"):
        slim_registry(source, module_tree(tmp_path, source))


def test_a_module_without_a_name_constant_refuses_the_rewrite(tmp_path: Path) -> None:
    root = module_tree(tmp_path)
    (root / "modules" / "text2vec-openai" / "module.go").write_text("package x\n")
    with pytest.raises(SlimmingError, match="no Name constant"):
        slim_registry(REGISTRY_SOURCE, root)


def test_constants_come_from_the_module_files_not_its_tests(tmp_path: Path) -> None:
    root = module_tree(tmp_path)
    assert module_constants(root / "modules" / "generative-google") == {
        "Name": "generative-google", "LegacyName": "generative-palm"}
