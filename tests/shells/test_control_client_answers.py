"""The Python control clients read what comes back over a real Unix socket, whatever it is.

The control path is the test's to give, and a path that names another program's socket (or a
mock killed mid-answer) answers with anything: a line that is not JSON, a JSON array, an error
whose code is a string, a result without the field the operation returns, no newline at all, or
more than any answer could be. Each of the three clients (blocking, asyncio, trio) then raised
whatever its parsing met (JSONDecodeError, AttributeError, KeyError, TypeError) or, past the
bound, read without limit. Now a call returns the operation's value, raises ``ControlError`` for
an error response, or raises ``NotAnAnswer`` naming what came; nothing else, and it never hangs.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockmcp import controlclient
from mockmcp.controlclient import AsyncControl, ControlError, NotAnAnswer, SyncControl


@contextmanager
def answering(answer: bytes) -> Iterator[str]:
    """A Unix socket server that reads one request line per connection and sends ``answer``, then closes."""
    folder = tempfile.mkdtemp(prefix="ctl-")
    path = os.path.join(folder, "c.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                with conn.makefile("rb") as f:
                    f.readline()
                try:
                    conn.sendall(answer)
                except OSError:
                    pass  # the client stopped reading: past its bound

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:  # (close() does not end an accept())
            wake.connect(path)
        thread.join(5)
        assert not thread.is_alive()
        server.close()
        os.unlink(path)
        os.rmdir(folder)


def _sync(path: str) -> Any:
    return SyncControl(path, connect_timeout=1).emit("tools/list_changed")


def _asyncio(path: str) -> Any:
    return asyncio.run(AsyncControl(path, connect_timeout=1).emit("tools/list_changed"))


def _trio(path: str) -> Any:
    return trio.run(AsyncControl(path, connect_timeout=1).emit, "tools/list_changed")


CLIENTS = {"sync": _sync, "asyncio": _asyncio, "trio": _trio}


def _outcome(client: str, answer: bytes) -> tuple[str, Any]:
    with answering(answer) as path:
        try:
            return "value", CLIENTS[client](path)
        except ControlError as exc:
            return "error", exc.code
        except NotAnAnswer as exc:
            return "refused", str(exc)


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize(("answer", "expected"), [
    (b'{"jsonrpc": "2.0", "id": 1, "result": {"delivered": 3}}\n', ("value", 3)),
    (b'{"jsonrpc": "2.0", "id": 1, "result": {"delivered": 3}}\n{"more": 1}\n', ("value", 3)),
    (b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "no"}}\n', ("error", -32602)),
    (b"", ("refused", "the mock closed the control connection without answering")),
    (b"HTTP/1.1 400 Bad Request\r\n\r\n", ("refused", "the control socket answered with something that is not a JSON-RPC response: b'HTTP/1.1 400 Bad Request\\r\\n'")),
    (b"[1, 2]\n", ("refused", "the control socket answered with something that is not a JSON-RPC response: b'[1, 2]\\n'")),
    (b'{"error": {"code": "x"}}\n', ("refused", "the control socket answered with something that is not a JSON-RPC response: b'{\"error\": {\"code\": \"x\"}}\\n'")),
    (b'{"error": "boom"}\n', ("refused", "the control socket answered with something that is not a JSON-RPC response: b'{\"error\": \"boom\"}\\n'")),
    (b'{"result": 7}\n', ("refused", "the control socket's answer has no 'delivered': b'{\"result\": 7}\\n'")),
    (b'{"result": {}}', ("refused", "the control socket's answer has no 'delivered': b'{\"result\": {}}'")),
    (b"[" * 100_000 + b"\n", ("refused", "the control socket answered with something that is not a JSON-RPC response: b'" + "[" * 200 + "'")),
], ids=["value", "two-lines", "error", "nothing", "http", "array", "string-code", "string-error", "no-field", "no-newline", "deep"])
def test_each_answer_is_a_value_an_error_or_refused(client: str, answer: bytes, expected: tuple[str, Any]) -> None:
    assert _outcome(client, answer) == expected


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_an_answer_past_the_bound_is_refused_not_read_whole(client: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controlclient, "MAX_ANSWER", 100_000)
    kind, why = _outcome(client, b'{"result": {"delivered": "' + b"x" * 1_000_000 + b'"}}\n')
    assert kind == "refused" and why.startswith("the control socket's answer is longer than 100000 bytes"), why


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                         ["jsonrpc", "id", "result", "error", "code", "message", "data", "delivered"]), inner, max_size=4),
                     max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=st.one_of(st.binary(max_size=64).map(lambda b: b + b"\n"),
                        _JSON.map(lambda v: json.dumps(v).encode() + b"\n")),
       client=st.sampled_from(sorted(CLIENTS)))
def test_fuzzed_answers_never_raise_anything_else(answer: bytes, client: str) -> None:
    kind, value = _outcome(client, answer)
    if kind == "value":  # only from a response whose result holds the field
        response = json.loads(answer)
        assert response["result"]["delivered"] == value


@contextmanager
def silent() -> Iterator[str]:
    """A Unix socket server that accepts, reads the request and never answers (a stopped mock)."""
    folder = tempfile.mkdtemp(prefix="ctl-")
    path = os.path.join(folder, "c.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    try:
        yield path
    finally:
        server.close()  # the connections it never accepted go with it
        os.unlink(path)
        os.rmdir(folder)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_silence_is_refused_after_the_answer_timeout_beyond_the_operations_own(client: str) -> None:
    """A peer that accepts and says nothing (a SIGSTOPped mock) held every client forever; now each
    gives up ``answer_timeout`` seconds beyond the wait the operation asks for."""
    import time

    calls = {
        "sync": lambda path: SyncControl(path, answer_timeout=0.3).wait_for("tools/call", timeout=0.4),
        "asyncio": lambda path: asyncio.run(AsyncControl(path, answer_timeout=0.3).wait_for("tools/call", timeout=0.4)),
        "trio": lambda path: trio.run(lambda: AsyncControl(path, answer_timeout=0.3).wait_for("tools/call", timeout=0.4)),
    }
    with silent() as path:
        started = time.monotonic()
        with pytest.raises(NotAnAnswer, match=f"no answer from {path} within 0.7 s"):
            calls[client](path)
        took = time.monotonic() - started
    assert 0.7 <= took < 10, took


def test_ctl_gives_up_on_silence_with_status_2_and_names_a_missing_socket(tmp_path: Any) -> None:
    from support.process import run_mock

    with silent() as path:
        proc = run_mock("ctl", path, "ping", "--answer-timeout", "0.3", timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == (f"mockmcp ctl: no answer from {path} within 0.3 s: it accepted the connection "
                                            "but said nothing (a stopped mock, or another program's socket)")
    missing = str(tmp_path / "gone.sock")
    with pytest.raises(FileNotFoundError, match=f"No such file or directory: '{missing}'"):
        SyncControl(missing, connect_timeout=0.05).emit_tools_changed()
