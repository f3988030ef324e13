"""The HTML timeline in a real headless Chromium (Debian package `chromium`): lanes and arrows in the DOM, a non-blank screenshot.

Under CI=true the browser must be there (the test fails without it); elsewhere
a missing browser skips with the package to install. The PNG is decoded with
zlib and struct (no image library) to count its distinct pixel values.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from support.messages import line, request
from support.process import run_mock

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


@pytest.fixture
def chromium(tmp_path: Path) -> list[str]:
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: CI must install the Debian package `chromium` (apt-get install -y chromium)")
        pytest.skip("headless browser test needs the Debian package `chromium` (apt-get install -y chromium)")
    return [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
    ]


@pytest.fixture
def page(tmp_path: Path) -> Path:
    """A timeline of a real exchange with two mock processes (a crash and a restart) and a hostile argument."""
    journal = tmp_path / "j.jsonl"
    first = [request(1, "tools/list"), request(2, "tools/call", {"name": "garbage"}), request(3, "tools/call", {"name": "crash"})]
    run_mock("run", "faults", "--journal", str(journal), input=b"".join(map(line, first)))
    second = [request(4, "tools/call", {"name": "flaky", "arguments": {"x": "</script><img src=x onerror=alert(1)>"}})]
    run_mock("run", "faults", "--journal", str(journal), input=b"".join(map(line, second)))
    out = tmp_path / "timeline.html"
    assert run_mock("journal", str(journal), "--html", str(out)).returncode == 0
    return out


def test_lanes_and_arrows_are_in_the_dom(chromium: list[str], page: Path) -> None:
    proc = subprocess.run([*chromium, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert dom.count('class="lanehead mock"') == 2  # one lane per mock process
    assert dom.count('class="arrow"') >= 8  # one arrow per message
    assert 'class="row msg out response error' in dom  # flaky's -32603
    assert "<img" not in dom  # the hostile argument stayed text


def _png_pixels(data: bytes) -> tuple[int, int, set[bytes]]:
    """Width, height and the distinct pixel values of an 8-bit RGB/RGBA PNG (the filters undone)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color in (2, 6), (depth, color)
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    previous, pixels = bytearray(stride), set()
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - bpp] if i >= bpp else 0
            up, up_left = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                row[i] = (row[i] + left) & 255
            elif kind == 2:
                row[i] = (row[i] + up) & 255
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        pixels.update(bytes(row[i : i + bpp]) for i in range(0, stride, bpp * 7))  # a sample is enough to tell blank from drawn
        previous = row
    return width, height, pixels


def test_screenshot_is_not_blank(chromium: list[str], page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    proc = subprocess.run([*chromium, f"--screenshot={shot}", "--window-size=1200,800", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, height, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 800)
    assert len(pixels) > 20, f"only {len(pixels)} distinct colours: the page looks blank"
