"""Text read from a screenshot by Tesseract, when no model reads images (bot/chat/files.py)."""

from __future__ import annotations

import io
import os

import pytesseract
from PIL import Image, ImageOps

UPSCALE_BELOW = 1000  # Tesseract reads small screen text better at twice its size


def text_of(data: bytes, timeout_s: float) -> str:
    """The image's text; the caller has checked its format and pixel bounds already."""
    # Tesseract's OpenMP threads fight over a small machine's cores with the rest of Sift:
    # one thread read a 1280x720 screenshot in 2.9 s against 12.6 s (bench/files.py, 2 busy
    # cores). pytesseract hands the process environment to tesseract; an operator's own
    # value stands. (Sift's embedding runtimes use their own thread pools, not OpenMP.)
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    with Image.open(io.BytesIO(data)) as image:
        gray = ImageOps.grayscale(image.convert("RGB"))
    if max(gray.size) < UPSCALE_BELOW:
        gray = gray.resize((gray.width * 2, gray.height * 2), Image.Resampling.LANCZOS)
    # --psm 6: one uniform block of text, what a screenshot of an error mostly is
    text = pytesseract.image_to_string(gray, lang="eng", config="--psm 6", timeout=timeout_s)
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())
