"""Bounds: hostile or absurd input is answered with an error, never a crash, a hang or unbounded memory.

Each case runs over the fake link (the real shell on memory streams) and end to end through a real
``mockmcp run`` process, whose every output line must be a valid message.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

from support.process import direct_cmd, mockmcp_cmd, own_pid, run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import bundled
from support.messages import call, call_line, discover, line

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire.framing import DEFAULT_MAX_LINE, LineFramer, Oversized


def default_link(**kw) -> FakeLink:
    return FakeLink(bundled("default"), **kw)


# Hostile lines, each with the error code it must get (None: a valid answer is fine too).
HOSTILE: list[tuple[str, bytes, int]] = [
    # Valid JSON past the limits (nesting, numbers) is no parse error: -32600, or -32602 with the id.
    ("nested 100k deep", b"[" * 100_000 + b"]" * 100_000 + b"\n", -32600),
    ("nested objects 50k deep", b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"\n", -32600),
    ("huge float", call_line(1, "echo", '{"text": 1e400}'), -32602),
    ("huge negative float", b'{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"x":-1e999}}\n', -32602),
    ("integer with 100k digits", call_line(3, "add", '{"a": %s, "b": 1}' % ("9" * 100_000)), -32602),
    ("invalid UTF-8", b'{"jsonrpc":"2.0","id":4,"method":"\xff\xfe\xfd"}\n', -32700),
    ("truncated UTF-8", b'{"jsonrpc":"2.0","id":5,"method":"tools/list\xe2\x82"}\n', -32700),
    ("NUL bytes", b"\x00\x00\x00\n", -32700),
    ("NUL inside a request", b'{"jsonrpc":"2.0",\x00"id":6,"method":"tools/list"}\n', -32700),
    ("NaN literal", b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":NaN}}\n', -32700),
    ("lone surrogate escape", call_line(8, "echo", '{"text": "\\ud800"}'), 0),
    ("a batch array", b"[" + line(discover(9))[:-1] + b"]\n", -32600),
]


def test_default_line_limit_is_four_mib():
    assert DEFAULT_MAX_LINE == 4 * 1024 * 1024
    assert LineFramer().max_line == DEFAULT_MAX_LINE


def test_hostile_lines_get_errors_over_the_core(schema):
    for name, data, code in HOSTILE:
        with default_link() as link:
            out = link.send(data, discover("after"))
        assert len(out) == 2, (name, out)
        reply, after = out
        for msg in out:
            schema.check(msg)
        if code:
            assert reply["error"]["code"] == code, (name, reply)
        else:
            assert "result" in reply, (name, reply)
        assert after["id"] == "after" and "result" in after, name  # and the connection lives on


def test_hostile_lines_never_raise_anything_but_client_errors():
    for name, data, _ in HOSTILE:
        try:
            jsonrpc.decode(data.rstrip(b"\n"))
        except errors.ClientError:
            pass


def test_over_long_line_is_answered_and_the_next_line_recovers(schema):
    link = default_link(max_line=1000)
    big = call_line(1, "echo", json.dumps({"text": "x" * 5000}))
    # Delivered in small chunks, so the framer discards it on the fly.
    out = []
    for i in range(0, len(big), 300):
        out += link.send(big[i : i + 300])
    out += link.send(line(call(2, "echo", text="ok")))
    assert len(out) == 2
    schema.check(out[0])
    assert out[0]["error"]["code"] == -32600 and "line limit" in out[0]["error"]["message"]
    assert out[1]["id"] == 2 and out[1]["result"]["content"][0]["text"] == "ok"


def test_framer_reports_an_over_long_line_once_and_keeps_memory_bounded():
    framer = LineFramer(max_line=64)
    got = []
    for _ in range(10_000):  # 10 MB without a newline
        got += framer.feed(b"y" * 1000)
        assert len(framer._buf) <= 64
    got += framer.feed(b"tail\nnext\n")
    assert len(got) == 2 and isinstance(got[0], Oversized) and got[0].length == 10_000_004
    assert got[1] == b"next"


def _check_lines(schema, stdout: bytes) -> list[dict]:
    assert stdout.endswith(b"\n")
    msgs = []
    for raw in stdout.split(b"\n")[:-1]:
        msg = json.loads(raw)
        schema.check(msg)
        msgs.append(msg)
    return msgs


def test_hostile_lines_end_to_end(schema):
    data = b"".join(d for _, d, _ in HOSTILE) + line(discover("last"))
    t = time.monotonic()
    proc = run_mock("run", "default", input=data, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert time.monotonic() - t < 30
    msgs = _check_lines(schema, proc.stdout)
    assert len(msgs) == len(HOSTILE) + 1
    for (name, _, code), msg in zip(HOSTILE, msgs):
        if code:
            assert msg["error"]["code"] == code, (name, msg)
    assert msgs[-1]["id"] == "last" and "result" in msgs[-1]


def test_line_limit_end_to_end_default_and_flag(schema):
    over_default = call_line("big", "echo", json.dumps({"text": "z" * DEFAULT_MAX_LINE}))
    under_flag = call_line("small", "echo", json.dumps({"text": "z" * 500}))
    proc = run_mock("run", "default", input=over_default + line(discover(1)), timeout=60)
    msgs = _check_lines(schema, proc.stdout)
    assert [m.get("error", {}).get("code") for m in msgs] == [-32600, None]
    assert "4194304-byte line limit" in msgs[0]["error"]["message"]
    proc = run_mock("run", "default", "--max-line-bytes", "300", input=under_flag + line(discover(2)), timeout=60)
    msgs = _check_lines(schema, proc.stdout)
    assert [m.get("error", {}).get("code") for m in msgs] == [-32600, None]
    assert msgs[1]["id"] == 2


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for row in fh:
            if row.startswith("VmRSS:"):
                return int(row.split()[1])
    raise AssertionError("no VmRSS")


def test_flood_without_reading_is_back_pressured(schema):
    """A client that writes and never reads stalls on a full pipe; the mock's memory stays bounded."""
    n = 100_000  # about 20 MB of requests
    one = line(call(0, "echo", text="x" * 100))
    proc = subprocess.Popen(direct_cmd("run", "default"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)  # (its own memory is read below)
    written = [0]

    def writer() -> None:
        try:
            for i in range(0, n, 100):
                proc.stdin.write(b"".join(one.replace(b'"id": 0', b'"id": %d' % j, 1) for j in range(i, i + 100)))
                written[0] = i + 100
            proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    try:
        # Wait until the writer makes no progress for a whole second (the pipes are full).
        deadline = time.monotonic() + 30
        last = -1
        while written[0] != last and time.monotonic() < deadline:
            last = written[0]
            time.sleep(1.0)
        assert written[0] == last < n // 4, f"the mock kept reading ({written[0]} requests) although nobody read"
        rss_mb = _rss_kib(own_pid(proc.pid)) / 1024
        assert rss_mb < 100, f"{rss_mb:.0f} MB resident while stalled"
        # Now read: everything flows again and every request is answered.
        got = 0
        buf = b""
        fd = proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            if got == 0:
                schema.check(json.loads(chunk.split(b"\n", 1)[0]))
            got += chunk.count(b"\n")
            buf = chunk
        assert got == n and buf.endswith(b"\n")
    finally:
        proc.kill()
        proc.wait()
        th.join(5)
