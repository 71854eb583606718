"""Draws the Teams app icons (a sieve over grains) with the standard library only.

    python deploy/teams/icons.py      # rewrites color.png (192x192) and outline.png (32x32)

Teams wants a full-colour 192x192 icon and a 32x32 outline icon that is white on a
transparent background.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ACCENT = (0x2E, 0x5C, 0x8A)
WHITE = (255, 255, 255)
SAMPLES = 4  # per axis: 16 samples a pixel for smooth edges

Point = tuple[float, float]
FUNNEL: list[Point] = [(0.16, 0.34), (0.84, 0.34), (0.57, 0.62), (0.57, 0.84),
                       (0.43, 0.90), (0.43, 0.62)]
GRAINS: list[tuple[float, float, float]] = [(0.33, 0.19, 0.065), (0.50, 0.14, 0.065),
                                            (0.67, 0.19, 0.065)]


def _in_polygon(x: float, y: float, polygon: list[Point]) -> bool:
    inside = False
    for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def _mark(x: float, y: float) -> bool:
    """The white glyph: a funnel with three grains above it (unit square coordinates)."""
    if any((x - cx) ** 2 + (y - cy) ** 2 <= r * r for cx, cy, r in GRAINS):
        return True
    return _in_polygon(x, y, FUNNEL)


def _rounded_square(x: float, y: float, radius: float = 0.18) -> bool:
    cx = min(max(x, radius), 1 - radius)
    cy = min(max(y, radius), 1 - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius * radius


def _coverage(inside: Callable[[float, float], bool], px: int, py: int, size: int) -> float:
    hits = sum(inside((px + (i + 0.5) / SAMPLES) / size, (py + (j + 0.5) / SAMPLES) / size)
               for i in range(SAMPLES) for j in range(SAMPLES))
    return hits / SAMPLES**2


def _pixel_color(px: int, py: int, size: int) -> bytes:
    background = _coverage(_rounded_square, px, py, size)
    mark = _coverage(_mark, px, py, size)
    rgb = [round(a * (1 - mark) + w * mark) for a, w in zip(ACCENT, WHITE, strict=True)]
    return bytes([*rgb, round(255 * max(background, mark))])


def _pixel_outline(px: int, py: int, size: int) -> bytes:
    return bytes([*WHITE, round(255 * _coverage(_mark, px, py, size))])


def png(size: int, pixel: Callable[[int, int, int], bytes]) -> bytes:
    """An 8-bit RGBA PNG."""
    rows = b"".join(b"\0" + b"".join(pixel(x, y, size) for x in range(size))
                    for y in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def main() -> None:
    (HERE / "color.png").write_bytes(png(192, _pixel_color))
    (HERE / "outline.png").write_bytes(png(32, _pixel_outline))


if __name__ == "__main__":
    main()
