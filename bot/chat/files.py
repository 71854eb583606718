"""Files attached to a question: fetched within limits, read (image, text, PDF), never kept."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rag import messages
from rag.types import Answer, QuestionImage

if TYPE_CHECKING:  # bot.settings imports the chat core's limits
    import aiohttp

    from bot.settings import FilesSettings

log = logging.getLogger(__name__)

# The bytes of one attachment, at most `limit` of them (more raises TooLarge); a platform's
# download with its own credentials, or bytes the web chat already holds.
Fetch = Callable[[int], Awaitable[bytes]]
IMAGE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
_BY_SUFFIX = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".txt": "text/plain",
    ".log": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
    ".pdf": "application/pdf",
}
SHOWN_CHARS = 160  # of a screenshot's text, quoted back above the answer
PDF_PAGES = 20  # a PDF's first part is its first pages' text


class TooLarge(Exception):
    """More bytes came than the limit allows (a download stops reading there)."""


async def capped(stream: aiohttp.StreamReader, declared: int | None, limit: int) -> bytes:
    """A download's body, read no further than `limit` bytes (what a platform's surface
    uses to fetch an attachment)."""
    if declared is not None and declared > limit:
        raise TooLarge(f"{declared} bytes declared")
    data = bytearray()
    async for piece in stream.iter_chunked(64 * 1024):
        data += piece
        if len(data) > limit:
            raise TooLarge(f"over {limit} bytes")
    return bytes(data)


@dataclass(frozen=True)
class Attached:
    """A file on the message being answered, posted by its sender (the platform checks)."""

    name: str
    media_type: str  # as the platform declares it; "" when it says nothing
    size: int  # declared size in bytes; 0 when unknown
    fetch: Fetch = field(repr=False, compare=False)

    @property
    def kind(self) -> str:
        declared = self.media_type.split(";", 1)[0].strip().lower()
        if declared in ("", "application/octet-stream", "binary/octet-stream"):
            suffix = self.name[self.name.rfind(".") :].lower() if "." in self.name else ""
            declared = _BY_SUFFIX.get(suffix, declared)
        if declared == "image/*":  # Teams' inline images; the header tells (checked_image)
            return "image/png"
        return "text/plain" if declared == "text/x-log" else declared


@dataclass(frozen=True)
class Read:
    """What the files gave the question: text joining it, images for a model, and what the
    answer says about them (what was read, what could not be, in one sentence each)."""

    text: str = ""
    images: tuple[QuestionImage, ...] = ()
    notes: tuple[str, ...] = ()
    plain: str = ""  # the text read, without the files' names (what is asked about)

    def question(self, asked: str) -> str:
        """The question as the pipeline gets it (and storage keeps it): the person's words,
        then what was read from their files."""
        parts = [p for p in (asked.strip(), self.text) if p]
        if not parts and self.images:
            return messages.ATTACHED_ONLY
        return "\n\n".join(parts)

    def told(self, answer: Answer) -> Answer:
        """The answer, opening with what was read of the files and what could not be."""
        if not self.notes:
            return answer
        return replace(answer, text="\n".join(self.notes) + "\n\n" + answer.text)


class Unreadable(Exception):
    """A file that cannot be read; `sentence` says so to the asker."""

    def __init__(self, sentence: str, cause: str) -> None:
        super().__init__(cause)
        self.sentence = sentence


class FileReader:
    """Reads a question's files under `[files]`' limits; a file that cannot be read is one
    sentence for the asker and a log line with the cause (the correlation id is the log's)."""

    def __init__(self, settings: FilesSettings) -> None:
        self._s = settings

    async def read(self, files: Sequence[Attached], *, vision: bool) -> Read:
        if not files:
            return Read()
        if not self._s.enabled:
            return Read(notes=(messages.FILES_OFF,))
        texts: list[str] = []
        plain: list[str] = []
        images: list[QuestionImage] = []
        notes: list[str] = []
        if len(files) > self._s.max_files:
            notes.append(messages.FILES_TOO_MANY.format(limit=self._s.max_files))
        for file in files[: self._s.max_files]:
            try:
                got = await self._one(file, vision=vision)
            except Unreadable as exc:
                log.warning(
                    "could not read the attached file %r (%s): %s",
                    file.name,
                    file.kind or "no type",
                    exc,
                )
                notes.append(exc.sentence)
                continue
            if isinstance(got, QuestionImage):
                images.append(got)
            elif got.strip():
                texts.append(f"Attached {file.name}:\n{got.strip()}")
                plain.append(got.strip())
                if file.kind.startswith("image/"):
                    notes.append(messages.FROM_SCREENSHOT.format(text=_shown(got)))
            else:
                notes.append(messages.FILE_NO_TEXT.format(name=file.name))
        return Read("\n\n".join(texts), tuple(images), tuple(notes), "\n\n".join(plain))

    async def _one(self, file: Attached, *, vision: bool) -> QuestionImage | str:
        kind = file.kind
        if kind not in self._s.types:
            raise Unreadable(
                messages.FILE_UNSUPPORTED.format(name=file.name),
                f"type {kind or 'unknown'} is not in [files] types",
            )
        limit = self._limit(kind)
        too_large = messages.FILE_TOO_LARGE.format(name=file.name, limit=_size(limit))
        if file.size > limit:
            raise Unreadable(too_large, f"{file.size} bytes declared, over {limit}")
        try:
            data = await file.fetch(limit)
        except TooLarge as exc:
            raise Unreadable(too_large, f"over {limit} bytes") from exc
        except Exception as exc:
            raise Unreadable(
                messages.FILE_UNREADABLE.format(name=file.name), f"download failed: {exc!r}"
            ) from exc
        if len(data) > limit:
            raise Unreadable(too_large, f"{len(data)} bytes, over {limit}")
        if kind.startswith("image/"):
            return await self._image(file.name, data, vision=vision)
        if kind == "application/pdf":
            return await asyncio.to_thread(_pdf_text, file.name, data, self._s.read_chars)
        return _text(data)[: self._s.read_chars]

    def _limit(self, kind: str) -> int:
        if kind.startswith("image/"):
            return self._s.max_image_bytes
        return self._s.max_pdf_bytes if kind == "application/pdf" else self._s.max_text_bytes

    async def _image(self, name: str, data: bytes, *, vision: bool) -> QuestionImage | str:
        media_type = checked_image(name, data, self._s)
        if vision:
            return QuestionImage(media_type, data, name)
        from bot.chat import ocr  # Tesseract's binding, only when a screenshot comes

        try:
            return await asyncio.to_thread(ocr.text_of, data, self._s.ocr_timeout_s)
        except Exception as exc:
            raise Unreadable(
                messages.FILE_UNREADABLE.format(name=name), f"OCR failed: {exc!r}"
            ) from exc


def checked_image(name: str, data: bytes, s: FilesSettings) -> str:
    """The image's media type, from its own header (not the declared one), once its format
    and dimensions are within bounds; nothing is decoded before the size is known."""
    from PIL import Image, UnidentifiedImageError

    too_large = messages.FILE_TOO_LARGE.format(name=name, limit=f"{s.max_pixels:,} pixels")
    Image.MAX_IMAGE_PIXELS = s.max_pixels  # Pillow's own bomb check, for any later decode
    try:
        with Image.open(io.BytesIO(data)) as image:  # reads the header only
            fmt, (width, height) = image.format or "", image.size
            if width * height > s.max_pixels or max(width, height) > s.max_image_side:
                raise Unreadable(too_large, f"{width}x{height} pixels")
            if fmt not in IMAGE_FORMATS:
                raise Unreadable(
                    messages.FILE_UNSUPPORTED.format(name=name), f"image format {fmt!r}"
                )
            image.verify()  # the whole file's structure and checksums, without decoding
    except Image.DecompressionBombError as exc:
        raise Unreadable(too_large, str(exc)) from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise Unreadable(messages.FILE_UNREADABLE.format(name=name), repr(exc)) from exc
    return IMAGE_FORMATS[fmt]


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        best = from_bytes(data).best()
        return str(best) if best is not None else data.decode("utf-8", errors="replace")


def _pdf_text(name: str, data: bytes, chars: int) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    parts: list[str] = []
    try:
        reader = PdfReader(io.BytesIO(data))
        for page in reader.pages[:PDF_PAGES]:
            parts.append(page.extract_text() or "")
            if sum(map(len, parts)) >= chars:
                break
    except (PyPdfError, OSError, ValueError, KeyError, TypeError) as exc:
        raise Unreadable(messages.FILE_UNREADABLE.format(name=name), repr(exc)) from exc
    return "\n".join(parts)[:chars]


def _shown(text: str) -> str:
    """A screenshot's text on one line, shortened, without backticks to break the quote."""
    flat = " ".join(text.replace("`", "'").split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"


def _size(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MB" if limit >= 1024 * 1024 else f"{limit // 1024} KB"
