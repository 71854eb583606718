"""A fake GitHub wiki: real git repositories served by git's own smart HTTP server
(`git http-backend`, as CGI), behind the same token check as the fake's API."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import tempfile
from pathlib import Path

from aiohttp import web

GIT_ENV = {"GIT_AUTHOR_NAME": "Mona", "GIT_AUTHOR_EMAIL": "mona@acme.example",
           "GIT_COMMITTER_NAME": "Mona", "GIT_COMMITTER_EMAIL": "mona@acme.example",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": tempfile.gettempdir(), "PATH": "/usr/bin:/bin"}


class Wikis:
    """`<owner>/<repo>.wiki.git` repositories under one folder; `write` commits pages."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="fake-wikis-")
        self.root = Path(self._folder.name)
        self.clones = 0
        self.refuse = False  # answer every clone 401, whatever the token

    def close(self) -> None:
        self._folder.cleanup()

    def _git(self, *args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)

    def write(self, full_name: str, pages: dict[str, str | None]) -> None:
        """Commit these pages (None: delete the page) to the wiki, creating it if need be."""
        bare = self.root / f"{full_name}.wiki.git"
        work = self.root / "work" / full_name
        if not bare.exists():
            bare.mkdir(parents=True)
            self._git("init", "--bare", "--quiet", "-b", "master", ".", cwd=bare)
            work.mkdir(parents=True)
            self._git("init", "--quiet", "-b", "master", ".", cwd=work)
            self._git("remote", "add", "origin", str(bare), cwd=work)
        for name, text in pages.items():
            if text is None:
                (work / name).unlink()
            else:
                (work / name).write_text(text, encoding="utf-8")
        self._git("add", "-A", cwd=work)
        self._git("commit", "--quiet", "-m", "Updated wiki", cwd=work)
        self._git("push", "--quiet", "origin", "master", cwd=work)

    async def serve(self, request: web.Request, allowed: set[str]) -> web.StreamResponse:
        """One smart-HTTP request, through `git http-backend`."""
        given = request.headers.get("Authorization", "").removeprefix("Basic ")
        try:
            user, _, token = base64.b64decode(given).decode().partition(":")
        except ValueError:
            user, token = "", ""
        if token not in allowed or self.refuse:
            return web.Response(status=401, text="Invalid username or password.",
                                headers={"WWW-Authenticate": 'Basic realm="GitHub"'})
        if request.path.endswith("/info/refs"):
            self.clones += 1
        env = {**GIT_ENV, "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": request.path, "QUERY_STRING": request.query_string,
               "REQUEST_METHOD": request.method, "REMOTE_USER": user,
               "CONTENT_TYPE": request.headers.get("Content-Type", ""),
               "HTTP_CONTENT_ENCODING": request.headers.get("Content-Encoding", "")}
        process = await asyncio.create_subprocess_exec(
            "git", "http-backend", env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _ = await process.communicate(await request.read())
        head, _, body = out.partition(b"\r\n\r\n")
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n") if line)
        status = int(headers.pop("Status", "200 OK").split()[0])
        if status == 404:
            return web.Response(status=404, text="Repository not found.")
        return web.Response(status=status, body=body, headers=headers)
