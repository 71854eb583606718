"""Images a test draws for questions: a screenshot of an error, a big one, a broken one."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from rag.types import Chunk

ROOT = Path(__file__).resolve().parents[2]
VPN_PAGE = ROOT / "examples" / "knowledge" / "it" / "vpn-setup.md"
VPN_URL = "https://wiki.northwind-relay.example/it/vpn"
# An error the sample VPN page's Troubleshooting section covers, as the client's dialog
# shows it: its title, then the message.
ERROR_LINES = ("Relay Connect", "Handshake did not complete")


def screenshot(lines: tuple[str, ...] = ERROR_LINES) -> bytes:
    """A PNG of a terminal's error lines, drawn the way a screen shows text."""
    image = Image.new("RGB", (720, 40 + 40 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=22)
    for n, line in enumerate(lines):
        draw.text((16, 20 + 40 * n), line, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def noise_png(side: int = 100) -> bytes:
    """A PNG that does not compress: its size grows with its area."""
    draws = random.Random(7)
    image = Image.frombytes("RGB", (side, side), draws.randbytes(side * side * 3))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def broken_png() -> bytes:
    """PNG's signature and a header chunk cut off: what a failed upload leaves."""
    return screenshot()[:60] + b"\x00" * 40


def vpn_troubleshooting() -> Chunk:
    """The sample VPN page's Troubleshooting section, as a chunk of its own."""
    text = VPN_PAGE.read_text(encoding="utf-8")
    section = re.search(r"## Troubleshooting\n(.*?)\n## ", text, re.S)
    assert section is not None
    return Chunk(
        chunk_id="kb:it-howto-vpn:troubleshooting",
        doc_id="it-howto-vpn",
        source="kb",
        title="Setting up the Relay Connect VPN",
        text=section.group(1).strip(),
        url=VPN_URL,
        section="Troubleshooting",
        content_hash="h-vpn",
        doc_type="how-to",
    )
