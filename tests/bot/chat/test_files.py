"""The file reader on its own: limits before any download or decode, each kind read, and one
sentence for every file it cannot read."""

from __future__ import annotations

import io
import logging
import struct
import zlib

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from bot.chat.files import Attached, FileReader, Read, TooLarge
from bot.settings import FilesSettings
from rag import messages
from rag.types import Answer, AnswerStatus, Question
from tests.fakes.screenshots import broken_png, screenshot

Fetched = list[str]


def attached(
    name: str,
    data: bytes,
    media_type: str = "",
    *,
    size: int | None = None,
    fetched: Fetched | None = None,
) -> Attached:
    async def fetch(limit: int) -> bytes:
        if fetched is not None:
            fetched.append(name)
        if len(data) > limit:
            raise TooLarge(f"{len(data)} bytes")
        return data

    return Attached(name, media_type, len(data) if size is None else size, fetch)


def bomb_png(width: int, height: int) -> bytes:
    """A PNG whose header claims `width`×`height` pixels, a few hundred bytes on the wire."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 1024))
        + chunk(b"IEND", b"")
    )


def pdf_with(text: str) -> bytes:
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def read(*files: Attached, vision: bool = False, **limits: object) -> Read:
    return await FileReader(FilesSettings.model_validate(limits)).read(files, vision=vision)


async def test_a_screenshot_is_read_by_ocr_and_quoted_back() -> None:
    got = await read(attached("error.png", screenshot(), "image/png"))
    assert got.plain == "Relay Connect\nHandshake did not complete"
    assert got.notes == (
        messages.FROM_SCREENSHOT.format(text="Relay Connect Handshake did not complete"),
    )
    assert got.question("what is this?").startswith("what is this?\n\nAttached error.png:\n")
    assert got.images == ()


async def test_with_a_model_the_image_itself_goes_and_its_type_is_its_own() -> None:
    png = screenshot()
    got = await read(attached("shot.jpg", png, "image/jpeg"), vision=True)  # it lies
    [image] = got.images
    assert (image.media_type, image.data) == ("image/png", png)
    assert got.notes == () and got.question("") == messages.ATTACHED_ONLY


@pytest.mark.parametrize(
    ("file", "limits", "sentence", "downloaded"),
    [
        (
            attached("big.png", b"x" * 5000, "image/png"),
            {"max_image_bytes": 4096},
            messages.FILE_TOO_LARGE.format(name="big.png", limit="4 KB"),
            False,
        ),
        # a size that was not declared: the download stops at the limit
        (
            attached("big.log", b"x" * 5000, "text/plain", size=0),
            {"max_text_bytes": 4096},
            messages.FILE_TOO_LARGE.format(name="big.log", limit="4 KB"),
            True,
        ),
        (
            attached("bomb.png", bomb_png(30_000, 30_000), "image/png"),
            {},
            messages.FILE_TOO_LARGE.format(name="bomb.png", limit="25,000,000 pixels"),
            True,
        ),
        (
            attached("tall.png", bomb_png(20, 9000), "image/png"),
            {},
            messages.FILE_TOO_LARGE.format(name="tall.png", limit="25,000,000 pixels"),
            True,
        ),
        (
            attached("broken.png", broken_png(), "image/png"),
            {},
            messages.FILE_UNREADABLE.format(name="broken.png"),
            True,
        ),
        (
            attached("fake.png", b"MZ\x90\x00 not an image", "image/png"),
            {},
            messages.FILE_UNREADABLE.format(name="fake.png"),
            True,
        ),
        (
            attached("broken.pdf", b"%PDF-1.7\n garbage", "application/pdf"),
            {},
            messages.FILE_UNREADABLE.format(name="broken.pdf"),
            True,
        ),
        (
            attached("setup.exe", b"MZ", "application/x-msdownload"),
            {},
            messages.FILE_UNSUPPORTED.format(name="setup.exe"),
            False,
        ),
        (
            attached("anim.bmp", b"BM", ""),
            {},
            messages.FILE_UNSUPPORTED.format(name="anim.bmp"),
            False,
        ),
    ],
)
async def test_a_file_that_cannot_be_read_is_one_sentence_and_logged(
    caplog: pytest.LogCaptureFixture,
    file: Attached,
    limits: dict[str, object],
    sentence: str,
    downloaded: bool,
) -> None:
    fetched: Fetched = []
    file = Attached(file.name, file.media_type, file.size, _counting(file, fetched))
    with caplog.at_level(logging.WARNING, logger="bot.chat.files"):
        got = await read(file, **limits)
    assert got.notes == (sentence,) and got.text == "" and got.images == ()
    assert bool(fetched) is downloaded
    assert file.name in caplog.text


def _counting(file: Attached, fetched: Fetched) -> object:
    async def fetch(limit: int) -> bytes:
        fetched.append(file.name)
        return await file.fetch(limit)

    return fetch


async def test_a_failed_download_is_a_sentence_too() -> None:
    async def refused(limit: int) -> bytes:
        raise ValueError("HTTP 403 from the file address")

    got = await read(Attached("error.png", "image/png", 10, refused))
    assert got.notes == (messages.FILE_UNREADABLE.format(name="error.png"),)


async def test_text_files_and_pdfs_join_the_question_by_their_first_part() -> None:
    log_file = attached(
        "relay.log", ("Handshake did not complete\n" * 400).encode(), "application/octet-stream"
    )  # typed by its name
    latin = attached("notes.txt", "Café: Handshake did not complete".encode("latin-1"))
    pdf = attached("guide.pdf", pdf_with("Handshake did not complete"), "application/pdf")
    got = await read(log_file, latin, pdf, read_chars=200)
    parts = got.plain.split("\n\n")
    assert len(parts[0]) <= 200
    assert "Café" in parts[1] and "Handshake did not complete" in parts[2]
    assert got.notes == ()


async def test_only_the_first_files_are_read_and_switched_off_none() -> None:
    files = [attached(f"{n}.txt", b"text") for n in range(3)]
    got = await read(*files, max_files=2)
    assert got.notes == (messages.FILES_TOO_MANY.format(limit=2),)
    assert got.plain == "text\n\ntext"
    off = await read(*files, enabled=False)
    assert (off.notes, off.plain) == ((messages.FILES_OFF,), "")


def test_the_answer_opens_with_what_was_read() -> None:
    answer = Answer("Switch to the TCP profile [1].", AnswerStatus.ANSWERED, Question("q"))
    told = Read(notes=("From your screenshot: `x`",)).told(answer)
    assert told.text == "From your screenshot: `x`\n\nSwitch to the TCP profile [1]."
    assert Read().told(answer) is answer
