"""Weaviate's source as `go mod download` leaves it, cut down to what the build rewrites."""

from __future__ import annotations

from pathlib import Path

from weaviate_server.slim import REGISTRY

# A registry of the same shape as Weaviate's adapters/handlers/rest/configure_api.go, cut down.
REGISTRY_SOURCE = '''package rest

import (
\t"strings"

\tmodstgfs "github.com/weaviate/weaviate/modules/backup-filesystem"
\tmodgenerativegoogle "github.com/weaviate/weaviate/modules/generative-google"
\tmodopenai "github.com/weaviate/weaviate/modules/text2vec-openai"
\t"github.com/weaviate/weaviate/usecases/modules"
)

func registerModules(appState *state.State) error {
\tdefaultVectorizers := []string{
\t\tmodopenai.Name,
\t}
\tdefaultGenerative := []string{
\t\tmodgenerativegoogle.Name,
\t}

\tif _, ok := enabledModules[modopenai.Name]; ok {
\t\tappState.Modules.Register(modopenai.New())
\t\tappState.Logger.
\t\t\tWithField("module", modopenai.Name).
\t\t\tDebug("enabled module")
\t}

\t_, enabledGenerativeGoogle := enabledModules[modgenerativegoogle.Name]
\t_, enabledGenerativePaLM := enabledModules[modgenerativegoogle.LegacyName]
\tif enabledGenerativeGoogle || enabledGenerativePaLM {
\t\tappState.Modules.Register(modgenerativegoogle.New())
\t}

\tif _, ok := enabledModules[modstgfs.Name]; ok {
\t\tappState.Modules.Register(modstgfs.New())
\t}
\treturn nil
}
'''


def module_tree(root: Path, source: str = REGISTRY_SOURCE) -> Path:
    """A module's source as `go mod download` leaves it: the registry and three modules."""
    registry = root / REGISTRY
    registry.parent.mkdir(parents=True)
    registry.write_text(source)
    modules = {
        "backup-filesystem": 'const (\n\tName = "backup-filesystem"\n)\n',
        "generative-google": 'const (\n\tName       = "generative-google"\n'
                             '\tLegacyName = "generative-palm"\n)\n',
        "text2vec-openai": 'const Name = "text2vec-openai"\n',
    }
    for name, constants in modules.items():
        package = root / "modules" / name
        package.mkdir(parents=True)
        (package / "module.go").write_text(f"package x\n\n{constants}")
        # A test file's constants are not the module's.
        (package / "module_test.go").write_text('package x\n\nconst Name = "wrong"\n')
    return root
