"""`sift serve` given a busy port or a folder that is not there: one sentence, no traceback,
exit 2, as a person starting it from a terminal sees it (a real `sift serve` process)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import unique_collection
from weaviate_server.process import ManagedWeaviate, free_port

pytestmark = pytest.mark.weaviate
SIFT = Path(sys.executable).parent / "sift"


def serve(tmp_path: Path, weaviate: ManagedWeaviate, port: int, folder: Path
          ) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "sift.toml"
    config.write_text(f'[[sources]]\nname = "handbook"\nkind = "folder"\npath = "{folder}"\n')
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SIFT_")
           and k != "ANTHROPIC_API_KEY"}
    env.update(SIFT_CONFIG=str(config), SIFT_DATA_DIR=str(tmp_path / "data"),
               SIFT_PORT=str(port), SIFT_WEAVIATE_URL=weaviate.url,
               SIFT_WEAVIATE_API_KEY=weaviate.api_key,
               SIFT_WEAVIATE__GRPC_URL=f"127.0.0.1:{weaviate.ports.grpc}",
               SIFT_WEAVIATE__COLLECTION=unique_collection("Busy"),
               SIFT_SYNC__SYNC_ON_START="false")
    return subprocess.run([str(SIFT), "serve"], env=env, capture_output=True, text=True,
                          timeout=180, check=False)


def test_a_busy_web_port_is_one_sentence(tmp_path: Path,
                                         weaviate_server: ManagedWeaviate) -> None:
    (tmp_path / "kb").mkdir()
    port = free_port()
    with socket.socket() as taken:  # as a first `sift serve` holds it
        taken.bind(("127.0.0.1", port))
        taken.listen()
        done = serve(tmp_path, weaviate_server, port, tmp_path / "kb")
    assert done.returncode == 2, done.stderr
    assert (f"sift: Cannot serve on http://127.0.0.1:{port}: something else is already "
            "listening there (another `sift serve`?); stop it, or set SIFT_PORT to a free "
            "port.") in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "Errno 98" not in done.stderr


def test_a_folder_that_is_not_there_stops_serve_before_it_starts(
        tmp_path: Path, weaviate_server: ManagedWeaviate) -> None:
    missing = tmp_path / "no-such-folder"
    done = serve(tmp_path, weaviate_server, free_port(), missing)
    assert done.returncode == 2, done.stderr
    assert (f"sift: Source 'handbook': the folder {missing} does not exist; correct its "
            f"`path` in {tmp_path / 'sift.toml'}.") in done.stderr
    assert "Traceback" not in done.stderr + done.stdout and "ERROR" not in done.stderr
    assert "Sift is serving" not in done.stdout
