"""The HTML timeline in a real headless Chromium (Debian package `chromium`), measured, not only looked at.

One journal from real `mockmcp` runs: the `faults` scenario (tools/list, a
hang, a flaky call with a hostile argument, then a crash: exit 3) and, after
the crash, the `progress` scenario (slow_task with 2 steps and a progress
token), as a client that restarts its server would leave it. One browser
(driven over ``--remote-debugging-pipe`` with the DevTools protocol) opens its
timeline at 1,400 x 1,000 CSS pixels; a script of this test measures the
page (nothing is built into the product for the test) and screenshots are
taken of the whole viewport and of the strip around the crashed process's
lifeline. Each test below then asserts one property on what was measured.

Under CI=true the browser must be there (the tests fail without it);
elsewhere a missing browser skips with the package to install. PNGs are
decoded with zlib and struct (no image library); the strips are small, so
decoding stays cheap.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any, Iterator

import pytest
from support.messages import call, line, request
from support.process import run_mock

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
WIDTH, HEIGHT = 1400, 1000
EVIL = "</script><img src=x onerror=alert(1)>"
SCALE = 0.25  # of the whole-viewport screenshot (350 x 250 pixels: enough to see what is drawn where)


# ---------------------------------------------------------------- a DevTools-protocol client over a pipe


class Browser:
    """Headless Chromium driven over ``--remote-debugging-pipe``: it reads commands on fd 3 and
    writes answers and events on fd 4, each a JSON text ended by a NUL byte."""

    def __init__(self, argv: list[str], log: Path) -> None:
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        to_chrome_r, from_chrome_w = _above_ten(to_chrome_r), _above_ten(from_chrome_w)  # not 3 or 4 themselves
        script = f'exec "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        with open(log, "wb") as err:
            self.proc = subprocess.Popen(["/bin/bash", "-c", script, "bash", *argv, "--remote-debugging-pipe"],
                                         pass_fds=(to_chrome_r, from_chrome_w), stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.log = log
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None, timeout: float = 60) -> Any:
        self.next_id += 1
        command: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        os.write(self.to_chrome, json.dumps(command).encode() + b"\0")
        for message in self._messages(timeout):
            if message.get("id") == self.next_id:
                assert "error" not in message, f"{method}: {message['error']}"
                return message["result"]
            self.events.append(message)
        raise AssertionError("unreachable")

    def wait_event(self, method: str, params: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        """The first event ``method`` (seen already or to come) whose parameters include ``params``."""
        def wanted(message: dict[str, Any]) -> bool:
            got = message.get("params", {})
            return message.get("method") == method and all(got.get(k) == v for k, v in params.items())

        for event in self.events:
            if wanted(event):
                return event
        for message in self._messages(timeout):
            if wanted(message):
                return message
            self.events.append(message)
        raise AssertionError("unreachable")

    def _messages(self, timeout: float) -> Iterator[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buffer:
                text, self.buffer = self.buffer.split(b"\0", 1)
                yield json.loads(text)
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.from_chrome], [], [], max(left, 0))
            if not ready:
                raise AssertionError(f"chromium did not answer within {timeout} s: {self.log.read_text(errors='replace')[-2000:]}")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise AssertionError(f"chromium closed the pipe: {self.log.read_text(errors='replace')[-2000:]}")
            self.buffer += chunk

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (AssertionError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)


def _above_ten(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


# ---------------------------------------------------------------- PNG


def png_rows(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and the rows of an 8-bit RGB/RGBA PNG (its filters undone)."""
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
    previous, rows = bytearray(stride), []
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind:
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
        rows.append(bytes(row))
        previous = row
    return width, height, bpp, rows


def pixel(rows: list[bytes], bpp: int, x: int, y: int) -> tuple[int, ...]:
    return tuple(rows[y][x * bpp : x * bpp + 3])


def differs(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return sum(abs(p - q) for p, q in zip(a, b)) > 30


# ---------------------------------------------------------------- what the test measures in the page

MEASURE = """
(async () => {
  if (location.protocol !== 'file:' || document.readyState !== 'complete') throw new Error('not the loaded timeline: ' + location.href);
  await document.fonts.ready;
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));  // painted, before the screenshots
  const box = r => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
  const textBox = el => { const range = document.createRange(); range.selectNodeContents(el); return box(range.getBoundingClientRect()); };
  const timeline = document.getElementById('timeline');
  const heads = [...document.querySelectorAll('#lanes .lanehead')].map(h => ({
    id: h.id, text: h.innerText, box: box(h.getBoundingClientRect()), text_box: textBox(h),
    scroll: [h.scrollWidth, h.clientWidth, h.scrollHeight, h.clientHeight]}));
  const rows = [...timeline.querySelectorAll('.row')].filter(r => r.id !== 'lanes').map(row => ({
    id: row.id, box: box(row.getBoundingClientRect()),
    labels: [...row.querySelectorAll('summary')].map(s => {
      // what is drawn of the label: its text, cut where the summary clips it, and its box if it is coloured
      const style = getComputedStyle(s), own = box(s.getBoundingClientRect());
      let drawn = textBox(s);
      if (style.overflowX !== 'visible') drawn = {...drawn, left: Math.max(drawn.left, own.left), right: Math.min(drawn.right, own.right)};
      if (style.backgroundColor !== 'rgba(0, 0, 0, 0)') drawn = {...drawn, left: Math.min(drawn.left, own.left), right: Math.max(drawn.right, own.right)};
      return {text: s.innerText, drawn, scroll: [s.scrollWidth, s.clientWidth]};
    })}));
  const parts = [...timeline.querySelectorAll('#lanes > *, .row > *')].map(e => e.getBoundingClientRect()).filter(r => r.width > 0);
  return {
    header: document.querySelector('header').innerText,
    heads, rows,
    extent: [Math.min(...parts.map(r => r.left)), Math.max(...parts.map(r => r.right))],
    timeline: box(timeline.getBoundingClientRect()),
    mock_heads: document.querySelectorAll('.lanehead.mock').length,
    arrows: document.querySelectorAll('details.arrow').length,
    error_rows: document.querySelectorAll('.row.msg.out.response.error').length,
    images: document.images.length,
    evil_shown: document.body.innerText.includes('</script><img src=x onerror=alert(1)>'),
  };
})()
"""


def exchange(tmp: Path) -> tuple[Path, dict[str, Any]]:
    """The journal of a faults run that crashes and of the progress run after it; its crash facts."""
    journal = tmp / "j.jsonl"
    faults = [request(1, "tools/list"), call(2, "hang"), call(3, "flaky", x=EVIL), call(4, "crash")]
    assert run_mock("run", "faults", "--journal", str(journal), input=b"".join(map(line, faults))).returncode == 3
    progress = [call(1, "slow_task", steps=2, meta={"progressToken": "p1"})]
    assert run_mock("run", "progress", "--journal", str(journal), input=b"".join(map(line, progress))).returncode == 0
    records = sorted((json.loads(text) for text in journal.read_text().splitlines()), key=lambda r: r["t"])  # the page's order
    exit_row = next(i for i, r in enumerate(records) if r["dir"] == "event" and r.get("kind") == "exit")
    pid = records[exit_row]["pid"]
    start_row = next(i for i, r in enumerate(records) if r["pid"] == pid)
    assert exit_row < len(records) - 3, "the progress run's rows come after the crash"
    return journal, {"pid": pid, "exit_row": f"m{exit_row}", "start_row": f"m{start_row}"}


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Everything the tests look at, from one browser launch."""
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: CI must install the Debian package `chromium` (apt-get install -y chromium)")
        pytest.skip("headless browser test needs the Debian package `chromium` (apt-get install -y chromium)")
    tmp = tmp_path_factory.mktemp("timeline")
    journal, crash = exchange(tmp)
    page = tmp / "timeline.html"
    assert run_mock("journal", str(journal), "--html", str(page)).returncode == 0
    return look(page, crash, tmp)


def look(page: Path, crash: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Open ``page`` in headless Chromium at WIDTH x HEIGHT: the measurements, the whole viewport
    (scaled down) and a 9-pixel strip around the crashed process's lifeline."""
    assert CHROMIUM is not None
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={tmp / 'profile'}", f"--window-size={WIDTH},{HEIGHT}"]
    browser = Browser(argv, tmp / "chromium.log")
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.send("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}, session)
        browser.send("Page.enable", None, session)
        browser.send("Page.setLifecycleEventsEnabled", {"enabled": True}, session)
        loader = browser.send("Page.navigate", {"url": page.as_uri()}, session)["loaderId"]
        browser.wait_event("Page.lifecycleEvent", {"name": "load", "loaderId": loader})  # this page's load, not about:blank's
        answer = browser.send("Runtime.evaluate", {"expression": MEASURE, "returnByValue": True, "awaitPromise": True}, session)
        assert "exceptionDetails" not in answer, answer
        measured: dict[str, Any] = answer["result"]["value"]
        whole = browser.send("Page.captureScreenshot", {"format": "png", "clip": {"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT, "scale": SCALE}}, session)
        head = next(h for h in measured["heads"] if h["id"] == f"lane-{crash['pid']}")
        x = round((head["box"]["left"] + head["box"]["right"]) / 2)
        top = next(r for r in measured["rows"] if r["id"] == crash["start_row"])["box"]["top"]
        strip = browser.send("Page.captureScreenshot", {"format": "png", "clip": {
            "x": x - 4, "y": top, "width": 9, "height": measured["timeline"]["bottom"] - top, "scale": 1}}, session)
    finally:
        browser.close()
    return {"measured": measured, "crash": crash, "strip_top": top,
            "whole": png_rows(base64.b64decode(whole["data"])), "strip": png_rows(base64.b64decode(strip["data"]))}


# ---------------------------------------------------------------- the properties


def lifelines(measured: dict[str, Any]) -> list[float]:
    """The x of every lifeline: the middle of its column head (the client's, then each mock's)."""
    return [(h["box"]["left"] + h["box"]["right"]) / 2 for h in measured["heads"]]


def test_column_heads_fit_their_columns(seen: dict[str, Any]) -> None:
    heads = seen["measured"]["heads"]
    assert len(heads) == 3  # the client and two mock processes
    for h in heads:
        scroll_width, client_width, scroll_height, client_height = h["scroll"]
        assert scroll_width <= client_width and scroll_height <= client_height, f"{h['text']!r} is clipped: {h['scroll']}"
        assert h["box"]["left"] - 0.5 <= h["text_box"]["left"] and h["text_box"]["right"] <= h["box"]["right"] + 0.5, h
    for a, b in zip(heads, heads[1:]):
        assert a["box"]["right"] <= b["box"]["left"] + 0.5, f"{a['text']!r} overlaps {b['text']!r}"


def test_no_label_crosses_a_lifeline(seen: dict[str, Any]) -> None:
    xs = lifelines(seen["measured"])
    crossing = [(label["text"], x) for row in seen["measured"]["rows"] for label in row["labels"] for x in xs
                if label["drawn"]["left"] + 1 < x < label["drawn"]["right"] - 1]
    assert not crossing, f"labels drawn across a lifeline (label, lifeline x): {crossing}"


def test_progress_rows_show_values_and_messages(seen: dict[str, Any]) -> None:
    labels = [label for row in seen["measured"]["rows"] for label in row["labels"] if "notifications/progress" in label["text"]]
    assert len(labels) == 2
    first = labels[0]
    assert "1/2" in first["text"] and "step 1 of 2" in first["text"], first["text"]
    assert first["scroll"][0] <= first["scroll"][1], "the progress label is cut off"
    assert "2/2" in labels[1]["text"] and "step 2 of 2" in labels[1]["text"]


def test_the_crashed_process_lifeline_ends_at_its_exit(seen: dict[str, Any]) -> None:
    measured, crash = seen["measured"], seen["crash"]
    rows = {r["id"]: r for r in measured["rows"]}
    exit_row = rows[crash["exit_row"]]
    # in the strip around the lifeline: a pixel row has a vertical line when its middle differs from both
    # edges, and that for 4 rows or more (a dashed arrow crossing the strip makes 2-row specks)
    width, height, bpp, strip = seen["strip"]
    mark = [differs(pixel(strip, bpp, 4, y), pixel(strip, bpp, 0, y)) and differs(pixel(strip, bpp, 4, y), pixel(strip, bpp, 8, y))
            for y in range(height)]
    line = [any(all(mark[s : s + 4]) for s in range(max(y - 3, 0), y + 1) if s + 4 <= height) for y in range(height)]
    top = seen["strip_top"]
    start = round(rows[crash["start_row"]]["box"]["bottom"] - top)
    end = round(exit_row["box"]["top"] - top)
    after = round(exit_row["box"]["bottom"] - top)
    before = sum(line[start:end]) / max(end - start, 1)
    assert before > 0.6, f"no lifeline found at the crashed lane's x while it ran ({before:.0%} of its pixel rows)"
    drawn_after = sum(line[after:])
    assert drawn_after <= 2, f"the crashed process's lifeline runs on for {drawn_after} pixels after its exit row"
    # and the exit status is written: on the exit row and in the process's column head
    assert re.search(r"status 3\b", " ".join(label["text"] for label in exit_row["labels"])), exit_row["labels"]
    head = next(h for h in measured["heads"] if h["id"] == f"lane-{crash['pid']}")
    assert "exited 3" in head["text"], head["text"]


def test_header_counts_client_findings_and_deliberate_faults_apart(seen: dict[str, Any]) -> None:
    header = seen["measured"]["header"]
    assert "0 client findings" in header, header
    assert re.search(r"2 deliberate faults \((crash, hang|hang, crash)\)", header), header
    assert "problem" not in header


def test_the_diagram_uses_the_page_width(seen: dict[str, Any]) -> None:
    left, right = seen["measured"]["extent"]
    assert right - left >= 0.9 * WIDTH, f"the diagram is {right - left:.0f} of {WIDTH} pixels wide"
    # and in the screenshot: something is drawn in the rows near both edges of the page
    width, height, bpp, rows = seen["whole"]
    assert (width, height) == (WIDTH * SCALE, HEIGHT * SCALE)
    band = range(round(seen["strip_top"] * SCALE), min(height, round(seen["measured"]["timeline"]["bottom"] * SCALE)))
    background = pixel(rows, bpp, width - 1, band.start)
    drawn = [x for x in range(width) if any(differs(pixel(rows, bpp, x, y), background) for y in band)]
    assert drawn and drawn[0] <= 0.1 * width and drawn[-1] >= 0.85 * width, f"drawn columns {drawn[:1]}..{drawn[-1:]} of {width}"


def test_screenshot_is_not_blank_and_content_is_escaped(seen: dict[str, Any]) -> None:
    width, height, bpp, rows = seen["whole"]
    colours = {rows[y][x * bpp : x * bpp + 3] for y in range(0, height, 3) for x in range(0, width, 3)}
    assert len(colours) > 20, f"only {len(colours)} distinct colours: the page looks blank"
    measured = seen["measured"]
    assert measured["mock_heads"] == 2  # one lane per mock process
    assert measured["arrows"] >= 8  # one arrow per message
    assert measured["error_rows"] >= 1  # flaky's -32603
    assert measured["images"] == 0 and measured["evil_shown"]  # the hostile argument stayed text
