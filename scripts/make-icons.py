#!/usr/bin/env python3
"""Draws the cockpit's app icons once (committed in web/public/icons): a nucleus on a dark tile,
in the sizes the manifest lists, plus a maskable one with the safe-zone padding. Standard
library only (zlib PNG writer), so it runs anywhere: python3 -B scripts/make-icons.py"""
import math
import struct
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "web" / "public" / "icons"
BG = (17, 24, 39)
RING = (96, 165, 250)
CORE = (250, 204, 21)


def png(path, size, pixels):
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(data)


def draw(size, scale):
    c = (size - 1) / 2
    r_core, r_ring, w = 0.16 * size * scale, 0.34 * size * scale, 0.045 * size * scale
    rows = []
    for y in range(size):
        row = []
        for x in range(size):
            d = math.hypot(x - c, y - c)
            # Three tilted orbits (ellipses) around the core.
            px = BG
            for k in range(3):
                a = k * math.pi / 3
                u = (x - c) * math.cos(a) + (y - c) * math.sin(a)
                v = -(x - c) * math.sin(a) + (y - c) * math.cos(a)
                e = math.hypot(u / r_ring, v / (r_ring * 0.38))
                if abs(e - 1) * r_ring * 0.38 < w / 2:
                    px = RING
            if d < r_core:
                px = CORE
            row.append(px)
        rows.append(row)
    return rows


OUT.mkdir(parents=True, exist_ok=True)
for size in (48, 72, 96, 144, 192, 512):
    png(OUT / f"icon-{size}.png", size, draw(size, 1.0))
# Maskable: the drawing within the central 80 % safe zone.
png(OUT / "maskable-512.png", 512, draw(512, 0.8))
png(OUT / "apple-touch-icon.png", 180, draw(180, 0.9))
