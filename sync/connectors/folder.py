"""The folder connector: a directory tree of Markdown, HTML, text, PDF and Office files."""

from __future__ import annotations

import asyncio
import os
import re
import unicodedata
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path

from rag.errors import ConfigError, SyncError
from sync.connectors.base import (
    ConnectorSettings,
    ConnectorSpec,
    DocumentFailure,
    Fetched,
    SourceConfig,
)
from sync.connectors.common.convert import (
    DocumentParseError,
    Parsed,
    build_document,
    decode_text,
    html_to_markdown,
    split_front_matter,
)
from sync.connectors.common.files import file_to_markdown

KINDS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
         ".txt": "text", ".pdf": "file", ".docx": "file", ".pptx": "file", ".xlsx": "file"}
# Salvages the id of a file whose front matter no longer parses, so that a typo in the YAML
# is reported without the document's existing chunks being pruned under its real id.
_DOC_ID_LINE = re.compile(r"\A---[ \t]*\r?\n(?:.*\r?\n)*?doc_id:[ \t]*['\"]?([^'\"\r\n#]+?)"
                          r"['\"]?[ \t]*\r?\n")
_HTML_DOC_ID = re.compile(r"<meta\s+name=[\"']doc_id[\"']\s+content=[\"']([^\"']+)[\"']", re.I)


class FolderConnector:
    """Every supported file under `root` is a document; its relative path is the default id."""

    cheap_ids = True  # a directory walk: every run prunes deleted files

    def __init__(self, root: Path, *, url_base: str = "",
                 default_access: tuple[str, ...] = ("public",),
                 max_file_bytes: int = 50 * 2**20) -> None:
        self.root = root
        self.url_base = url_base.rstrip("/")
        self.default_access = default_access
        self.max_file_bytes = max_file_bytes

    @property
    def empty_hint(self) -> str:
        """What the job says when a full pass found no file here at all."""
        return (f"{self.root} has no {', '.join(sorted(KINDS))} files (in it or its "
                "folders)")

    def _walk(self) -> Iterator[tuple[Path, str, str]]:
        """(path, relative path, why it is not read: "" when it is) for every candidate file,
        and for every link or mount point that leads out of the folder. What lies outside
        `root` is never read, however it is reached: a link in a shared folder must not put
        the machine's own files (/etc/passwd) into the index."""
        if not self.root.is_dir():
            raise SyncError(f"folder source {self.root} is not a directory",
                            user_message=f"The folder {self.root} does not exist or is not a "
                            "directory; check the source's `path`.")
        root = self.root.resolve()
        device = root.stat().st_dev
        for folder, dirs, files in os.walk(self.root):
            kept = []
            for name in sorted(d for d in dirs if not d.startswith(".")):
                path = Path(folder, name)
                why = _outside(path, root, device)
                if why:
                    yield path, self._relative(path), why
                elif not path.is_symlink():  # a link inside: its files are read where they are
                    kept.append(name)
            dirs[:] = kept
            for name in sorted(files):
                path = Path(folder, name)
                if not name.startswith(".") and path.suffix.lower() in KINDS:
                    yield path, self._relative(path), _outside(path, root, device)

    def _relative(self, path: Path) -> str:
        return unicodedata.normalize("NFC", path.relative_to(self.root).as_posix())

    def _files(self) -> Iterator[tuple[Path, str]]:
        return ((path, rel) for path, rel, why in self._walk() if not why)

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        """Files modified at or after `since` (all of them when `since` is None), in path order;
        each link out of the folder is reported (not read) on every run."""
        cutoff = since.timestamp() if since is not None else None
        for path, rel, why in self._walk():
            if why:
                # No id: nothing is recorded under it, and the listing leaves it out, so a copy
                # indexed before is pruned.
                yield DocumentFailure("", f"{rel}: not read: {why}")
                continue
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue  # deleted while we walked; the next full pass prunes it
            if cutoff is None or mtime >= cutoff:
                yield await asyncio.to_thread(self._load, path, rel)

    async def list_ids(self) -> set[str]:
        return await asyncio.to_thread(self._ids)

    def _ids(self) -> set[str]:
        ids = set()
        for path, rel in self._files():
            ids.add(self._declared_id(path) or rel)
        return ids

    def _declared_id(self, path: Path) -> str:
        """The doc_id a file declares itself, without converting its body."""
        kind = KINDS[path.suffix.lower()]
        if kind not in ("markdown", "html"):
            return ""
        try:
            with path.open("rb") as handle:  # the head only: the file may be huge
                head = handle.read(65536).decode("utf-8-sig", errors="replace")
        except OSError:
            return ""
        pattern = _DOC_ID_LINE if kind == "markdown" else _HTML_DOC_ID
        match = pattern.search(head)
        return match.group(1).strip() if match else ""

    def _load(self, path: Path, rel: str) -> Fetched:
        # The file's mtime only decides what an incremental run reads; it is not the
        # document's date (a git checkout or a copy resets it) and must not alter its hash.
        try:
            # Checked again as it is read: the walk's verdict is a moment old.
            why = _outside(path, self.root.resolve(), self.root.stat().st_dev)
            if why:
                return DocumentFailure("", f"{rel}: not read: {why}")
            parsed = self._parse(path)
            url = f"{self.url_base}/{rel}" if self.url_base else ""
            return build_document(rel, parsed, title=_title_from_name(path), url=url,
                                  default_access=self.default_access)
        except DocumentParseError as exc:
            return DocumentFailure(self._declared_id(path) or rel, f"{rel}: {exc}")
        except OSError as exc:
            return DocumentFailure(rel, f"{rel}: cannot read the file ({exc.strerror or exc})")

    def _parse(self, path: Path) -> Parsed:
        kind = KINDS[path.suffix.lower()]
        data = self._read(path)
        if kind == "file":
            return file_to_markdown(data, path.name)
        text = decode_text(data)
        if kind == "html":
            return html_to_markdown(text)
        if kind == "markdown":
            return split_front_matter(text)
        return Parsed(text, {"title": _first_line(text)})

    def _read(self, path: Path) -> bytes:
        """The file's bytes, if it is within the size limit: its size is checked before it is
        read, and the read stops past the limit (the file may grow in between). Read whole,
        decoded and parsed, a 100 MB file cost ~100 MB of peak memory just to be refused."""
        limit = self.max_file_bytes
        size = path.stat().st_size
        if size <= limit:
            with path.open("rb") as handle:
                data = handle.read(size + 1)  # read(n) sets n bytes aside: ask for no more
                if len(data) > size:  # it grew since: read on, to the limit at most
                    data += handle.read(limit + 1 - len(data))
            if len(data) <= limit:
                return data
            size = len(data)
        raise DocumentParseError(f"the file is {size / 2**20:.1f} MB, over the "
                                 f"{limit / 2**20:g} MB limit (SIFT_SYNC__MAX_FILE_MB): skipped")


def _outside(path: Path, root: Path, device: int) -> str:
    """Why `path` leads out of the source's folder; "" when it stays inside."""
    try:
        real = path.resolve(strict=True)
        on = real.stat().st_dev
    except (OSError, RuntimeError):  # a dangling link or a loop of links
        return "a link that leads nowhere" if path.is_symlink() else ""
    if not real.is_relative_to(root):
        return f"a link out of the source's folder (to {real})"
    if on != device or (path.is_dir() and os.path.ismount(real)):
        return "on another file system (a mount point) inside the source's folder"
    return ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip() if len(line.strip()) <= 120 else ""
    return ""


def _title_from_name(path: Path) -> str:
    words = re.sub(r"[-_]+", " ", path.stem).strip()
    return words[:1].upper() + words[1:]



class FolderSettings(ConnectorSettings):
    """A folder has no settings of its own: `path` (and `url`) sit on the source itself."""


def build(source: SourceConfig, _: FolderSettings) -> FolderConnector:
    if source.path is None:
        raise ConfigError(f"source {source.name} has no path", user_message=f"Source "
                          f"'{source.name}' is a folder but has no `path`.")
    return FolderConnector(source.path, url_base=source.url,
                           default_access=source.default_access,
                           max_file_bytes=source.max_file_bytes)


SPEC = ConnectorSpec("folder", FolderSettings, build, "a directory of Markdown, HTML, text "
                     "and PDF files")
