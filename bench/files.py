"""OCR time per screenshot: the file reader's check and Tesseract on screenshots of sizes."""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import time

from PIL import Image, ImageDraw, ImageFont

from bot.chat.files import Attached, FileReader
from bot.settings import FilesSettings

LINE = "relay-connect: Handshake did not complete (peer eu-core, timeout after 5s) 0x80070005"


def screen(width: int, height: int) -> bytes:
    """A screen of that size, white, with lines of error text 30 pixels apart."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=18)
    for y in range(20, height - 20, 30):
        draw.text((20, y), LINE, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


async def once(reader: FileReader, data: bytes) -> tuple[float, int]:
    async def fetch(limit: int) -> bytes:
        return data

    started = time.perf_counter()
    read = await reader.read([Attached("screen.png", "image/png", len(data), fetch)], vision=False)
    return time.perf_counter() - started, len(read.plain)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--sizes",
        default="720x120,1280x720,1920x1080",
        help="screenshots' sizes, comma-separated WIDTHxHEIGHT",
    )
    args = parser.parse_args()
    reader = FileReader(FilesSettings())
    print(f"{'size':>10} {'PNG KB':>7} {'chars':>6} {'median s':>9} {'max s':>7}")
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        data = screen(width, height)
        times, chars = [], 0
        for _ in range(args.runs):
            seconds, chars = await once(reader, data)
            times.append(seconds)
        print(
            f"{size:>10} {len(data) // 1024:>7} {chars:>6} {statistics.median(times):>9.2f} "
            f"{max(times):>7.2f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
