"""Edges of the control socket, through real ``mockmcp run --control PATH`` processes.

At exit a mock removes only the socket it bound: whatever else is at PATH by then
(a file, another mock's live socket) is left alone. And the socket's lines are
fuzzed: hostile JSON, deep nesting, huge lines, invalid UTF-8, wrong types for
every operation's fields, unknown operations, partial lines and disconnects;
after each input a valid control operation and an MCP probe on stdio must still be
answered, and the process must still be alive.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support.controlprocess import Mock
from support.fuzz import MUTATIONS, VALUES

from mockmcp.controlclient import SyncControl


def _kill(*mocks: Mock | None) -> None:
    for m in mocks:
        if m is not None and m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait()


def test_exit_leaves_a_regular_file_put_at_the_path(tmp_path: Path) -> None:
    m = Mock(tmp_path)
    try:
        os.unlink(m.path)  # someone removed the socket and put their own file there
        Path(m.path).write_text("mine")
        assert m.round_trip(1)["id"] == 1
        assert m.close() == 0
        assert Path(m.path).read_text() == "mine"
    finally:
        _kill(m)


def test_a_crash_leaves_a_regular_file_put_at_the_path(tmp_path: Path) -> None:
    m = Mock(tmp_path)
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(m.path)  # (connected before the socket leaves PATH)
            os.unlink(m.path)
            Path(m.path).write_text("mine")
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"shutdown","params":{"mode":"crash","status":3}}\n')
            assert json.loads(s.makefile("rb").readline())["result"]["status"] == 3
        assert m.proc.wait(10) == 3
        assert Path(m.path).read_text() == "mine"
    finally:
        _kill(m)


def test_exit_leaves_another_mocks_live_socket_at_the_path(tmp_path: Path) -> None:
    first = Mock(tmp_path)
    second = None
    try:
        os.unlink(first.path)  # (its socket is gone from PATH: a second mock may listen there)
        second = Mock(tmp_path)
        assert first.close() == 0
        assert os.path.exists(second.path)
        fresh = SyncControl(second.path, connect_timeout=10)  # a new connection: the socket is still served
        assert fresh.position() >= 0
        assert second.round_trip(2)["id"] == 2
        assert second.close() == 0
        assert not os.path.exists(second.path)  # its own socket it does remove
    finally:
        _kill(first, second)


# ---------------------------------------------------------------- fuzzing the control socket's lines

TEXT = st.text(max_size=8)
INTS = st.integers(-3, 300) | st.sampled_from([2**63, -(2**63), 10**30])
WRONG = VALUES  # (any JSON value: mostly the wrong type for the field it lands in)
KINDS = st.sampled_from(["tool", "prompt", "resource", "template"]) | TEXT
DEFINITIONS = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["echo", "add", "fresh"]) | WRONG,
        "uri": st.sampled_from(["file:///a", "x"]) | WRONG,
        "uriTemplate": st.sampled_from(["file:///{x}", "{", "x"]) | WRONG,
        "description": WRONG,
        "inputSchema": st.sampled_from([{"type": "object"}, {"type": "array"}, {"$ref": "#/x"}]) | WRONG,
        "text": WRONG,
        "replies": st.sampled_from([[], [{"steps": [{"text": "x"}]}], [{"steps": "x"}]]) | WRONG,
    },
)
WHENS = st.fixed_dictionaries(
    {},
    optional={
        "method": st.sampled_from(["tools/call", "tools/list", "x"]) | WRONG,
        "name": TEXT | WRONG,
        "uri": TEXT | WRONG,
        "arguments": WRONG,
        "nth": WRONG,
        "state": WRONG,
    },
)
STEPS = st.lists(
    st.sampled_from([{"text": "x"}, {"error": {"code": -32603}}, {"sleep": "1ms"}, {"hang": True}, {"nope": 1}, 5]), max_size=3
) | WRONG
# Each operation's fields, each drawn from plausible values or from any JSON value.
FIELDS: dict[str, dict[str, Any]] = {
    "ping": {},
    "emit": {
        "event": st.sampled_from(["tools/list_changed", "resources/updated", "log", "tasks", "tool/list_changed"]) | TEXT,
        "uri": TEXT, "level": st.sampled_from(["info", "debug", "emergency", "loud"]), "logger": TEXT, "data": WRONG, "taskId": TEXT,
    },
    "add": {"kind": KINDS, "definition": DEFINITIONS, "notify": st.booleans()},
    "replace": {"kind": KINDS, "definition": DEFINITIONS, "notify": st.booleans()},
    "remove": {"kind": KINDS, "key": st.sampled_from(["echo", "add", "file:///a"]) | TEXT, "notify": st.booleans()},
    "getState": {},
    "setState": {"state": st.sampled_from(["start", "x"]) | TEXT},
    "counters": {},
    "arm": {"when": WHENS, "steps": STEPS, "times": INTS},
    "disarm": {"id": INTS},
    "pause": {"seconds": st.floats(0, 5) | st.sampled_from([-1, 1e300])},
    "resume": {},
    "journal": {"since": INTS, "limit": INTS},
    "waitFor": {"when": WHENS, "timeout": st.floats(0, 0.3) | st.sampled_from([-1, 1e300]), "since": INTS},
    # never a valid shutdown (it would end the process): a mode that is not one, or a status out of range
    "shutdown": {"mode": st.sampled_from([5, [], {}, True, "explode", "Crash"]), "status": INTS},
    "listTasks": {},
    "getTask": {"taskId": TEXT},
    "setTask": {
        "taskId": TEXT, "status": st.sampled_from(["working", "completed", "failed", "done"]), "force": st.booleans(),
        "notify": st.booleans(), "statusMessage": TEXT, "pollIntervalMs": INTS, "inputRequests": WRONG, "result": WRONG,
        "error": WRONG,
    },
}


@st.composite
def control_request(draw: st.DrawFn) -> str:
    """A control request as JSON text: a known operation (its fields plausible or of any type) or not."""
    op = draw(st.sampled_from(sorted(FIELDS) * 3 + ["emitt", "", "shutDown", "__init__", "other"]))
    if op == "other":
        op = draw(TEXT)
    params: Any = {}
    for key, values in FIELDS.get(op, {}).items():
        if key == "mode" or draw(st.booleans()):  # (a shutdown always carries its invalid mode)
            params[key] = draw(values | WRONG) if key != "mode" else draw(values)
    if draw(st.integers(0, 9)) == 0:
        params = draw(WRONG)  # params that are not an object
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": op, "params": params}
    rid = draw(st.integers(0, 10**6) | TEXT | st.sampled_from([None, 1.5, [], {}, True, "absent"]))
    if rid != "absent":
        msg["id"] = rid
    if draw(st.integers(0, 19)) == 0:
        msg["method"] = draw(WRONG)
    return json.dumps(msg)


@st.composite
def control_input(draw: st.DrawFn) -> tuple[str, bytes]:
    """(how it is delivered, the bytes): a request mutated the ways a broken client writes it, or a
    huge or deeply nested line, delivered whole, in pieces, unfinished, or several at once."""
    special = draw(st.integers(0, 59))
    if special == 0:
        data = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (5 << 20) + b'"}}'  # over 4 MiB
    elif special == 1:
        data = b"[" * 100_000 + b"]" * 100_000
    elif special == 2:
        data = b'{"jsonrpc":"2.0","id":1,"method":"emit","params":{"event":"log","data":' + b"[" * 5000 + b"]" * 5000 + b"}}"
    else:
        text = draw(control_request())
        for _ in range(draw(st.sampled_from([0] * 6 + [1, 2]))):
            text = draw(st.sampled_from(MUTATIONS))(draw, text)
        data = text.encode("utf-8", "surrogatepass").replace(b"\n", b"")
        if draw(st.integers(0, 7)) == 0:
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\r"])) + data[at:]
    how = draw(st.sampled_from(["line", "line", "line", "pieces", "unfinished", "batch-and-leave", "crlf"]))
    return how, data


def _answer(sock: socket.socket, timeout: float) -> bytes:
    """One line from ``sock`` (``b""`` if none came within ``timeout`` or it closed)."""
    sock.settimeout(timeout)
    buffer = b""
    try:
        while b"\n" not in buffer:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return b""
            buffer += chunk
    except TimeoutError:
        return b""
    return buffer.split(b"\n", 1)[0]


def _deliver(path: str, how: str, data: bytes) -> None:
    """Send one fuzzed input; a complete line (not blank) must get one JSON-RPC answer on the socket."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        if how == "unfinished":
            s.sendall(data[: len(data) // 2])
            return  # (closed mid-line)
        if how == "batch-and-leave":
            s.sendall((data + b"\n") * 3)
            return  # (gone before reading its answers)
        if how == "pieces":
            for i in range(0, len(data), max(1, len(data) // 5)):
                s.sendall(data[i : i + max(1, len(data) // 5)])
            s.sendall(b"\n")
        else:
            s.sendall(data + (b"\r\n" if how == "crlf" else b"\n"))
        if not data.strip(b" \t\r"):
            return  # a blank line is skipped, not answered
        raw = _answer(s, 20)
        assert raw, f"no answer to {data[:200]!r}"
        msg = json.loads(raw)
        assert type(msg) is dict and msg.get("jsonrpc") == "2.0" and ("result" in msg) != ("error" in msg), raw[:300]


def _exchange(path: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        s.sendall(json.dumps({"jsonrpc": "2.0", "id": op, "method": op, "params": params}).encode() + b"\n")
        msg: dict[str, Any] = json.loads(_answer(s, 20))
    return msg


class _Served:
    """One mock for every fuzzed input (a spawn per input would cost more than the input); started
    again after an input failed, so each input is judged on what it did itself (and hypothesis,
    replaying a failing input, sees it fail again)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.mock: Mock | None = None
        self.n = 0
        self.failed = False

    def get(self) -> Mock:
        if self.mock is None or self.failed or self.mock.proc.poll() is not None:
            self.failed = False
            _kill(self.mock)
            self.n += 1
            folder = self.root / f"run{self.n}"
            folder.mkdir()
            self.mock = Mock(folder)
        return self.mock


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    holder = _Served(tmp_path_factory.mktemp("ctl"))
    yield holder
    m = holder.mock
    try:
        if m is not None and m.proc.poll() is None:
            assert m.close() == 0
            assert m.proc.stderr is not None and b"Traceback" not in m.proc.stderr.read()
    finally:
        _kill(m)


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(given_input=control_input())
def test_fuzzed_control_lines_never_stop_the_control_channel_or_the_mcp_stream(served: Any, given_input: tuple[str, bytes]) -> None:
    how, data = given_input
    m = served.get()
    try:
        _deliver(m.path, how, data)
        # the probes: valid control operations (which also undo a pause and an armed reply the
        # input may have made), then an MCP request on stdio
        assert _exchange(m.path, "disarm", {})["result"]["disarmed"] >= 0
        assert _exchange(m.path, "resume", {})["result"] == {}
        assert m.round_trip("probe")["result"]["resultType"] == "complete"
        assert m.proc.poll() is None
    except (AssertionError, OSError, ValueError) as exc:
        served.failed = True
        died = ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            m.proc.wait(1)  # (a mock that crashed may still be exiting)
        if m.proc.returncode is not None:
            assert m.proc.stderr is not None
            died = f"; the mock died (status {m.proc.returncode}): {m.proc.stderr.read()[-2000:].decode('utf-8', 'replace')}"
        raise AssertionError(f"{type(exc).__name__}: {exc}{died}") from None
