"""Just enough PNG decoding to look at a browser's screenshot (8-bit RGB or RGBA, not
interlaced, as Chromium writes them), without an imaging library."""

from __future__ import annotations

import struct
import zlib
from collections import Counter


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows (RGB or RGBA bytes per pixel)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, data, header = 8, b"", b""
    while position < len(png):
        length, kind = struct.unpack(">I4s", png[position : position + 8])
        chunk = png[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            data += chunk
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0, "unexpected PNG layout"
    step = 3 if color == 2 else 4
    raw = zlib.decompress(data)
    stride = width * step
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - step] if x >= step else 0
            up = previous[x]
            corner = previous[x - step] if x >= step else 0
            predictor = (0, left, up, (left + up) // 2, _paeth(left, up, corner))[kind]
            line[x] = (line[x] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def colours(png: bytes) -> Counter[tuple[int, int, int]]:
    """How many pixels of each RGB colour the image has."""
    width, _, rows = pixels(png)
    step = len(rows[0]) // width
    found: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        for x in range(0, len(row), step):
            found[(row[x], row[x + 1], row[x + 2])] += 1
    return found
