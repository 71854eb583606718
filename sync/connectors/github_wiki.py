"""A repository's wiki: no REST or GraphQL API reads its pages, so it is cloned (shallow, over
HTTPS with the source's token) into a temporary folder and read from there."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import tempfile
from pathlib import Path

from rag.errors import SyncError

PAGES = (".md", ".markdown", ".mediawiki", ".textile", ".rdoc", ".org", ".rst", ".txt")


async def wiki_pages(html_url: str, token: str, timeout_s: float,
                     label: str) -> dict[str, bytes] | None:
    """The wiki's page files by path; None when the repository has no wiki pages yet (GitHub
    creates the wiki's repository with its first page). The token goes in an HTTP header
    through git's environment, never on a command line another user could read."""
    git = shutil.which("git")
    if git is None:
        raise SyncError("git is not on PATH", user_message=f"{label}: reading wikis "
                        "(`github.wiki`) needs git installed on this machine.")
    auth = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": tempfile.gettempdir(),
           "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_COUNT": "2",
           "GIT_CONFIG_KEY_0": "http.extraHeader",
           "GIT_CONFIG_VALUE_0": f"Authorization: Basic {auth}",
           # The header would follow a redirect to another host: follow none.
           "GIT_CONFIG_KEY_1": "http.followRedirects", "GIT_CONFIG_VALUE_1": "false"}
    with tempfile.TemporaryDirectory(prefix="sift-wiki-") as folder:
        process = await asyncio.create_subprocess_exec(
            git, "clone", "--depth", "1", "--quiet", f"{html_url}.wiki.git", folder,
            env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            _, err = await asyncio.wait_for(process.communicate(), timeout_s)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise SyncError(f"git clone of {html_url}.wiki.git timed out", user_message=(
                f"{label}: cloning the wiki of {html_url} took over {timeout_s:g}s "
                "(`github.timeout_s`).")) from None
        said = err.decode(errors="replace").replace(token, "***").strip()
        if process.returncode != 0:
            if "not found" in said.lower():
                return None
            raise SyncError(f"git clone of {html_url}.wiki.git failed: {said}", user_message=(
                f"{label}: the wiki of {html_url} could not be cloned "
                f"({said.splitlines()[-1] if said else 'git failed'})."))
        root = Path(folder)
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and ".git" not in p.relative_to(root).parts
                and p.suffix.lower() in PAGES}
