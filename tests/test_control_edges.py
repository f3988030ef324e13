"""Edges of the control socket, through real ``mockmcp run --control PATH`` processes.

At exit a mock removes only the socket it bound: whatever else is at PATH by then
(a file, another mock's live socket) is left alone. And the socket's lines are
fuzzed: hostile JSON, deep nesting, huge lines, invalid UTF-8, wrong types for
every operation's fields, unknown operations, partial lines and disconnects;
after each input a valid control operation and an MCP probe on stdio must still be
answered, and the process must still be alive.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from helpers import discover
from test_control_shell import Mock

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
