"""The control socket of a real ``mockmcp run --control PATH`` process.

The MCP side is driven over the process's real stdin/stdout; the control side
through ``SyncControl`` or a raw socket. Bad control input, a flooding client and
a client that leaves mid-request must never disturb the MCP stream; the socket
is the owner's alone (mode 0600, no TCP listener), an existing path is refused
unless it is a stale socket, and both kinds of shutdown end the process.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.controlprocess import SCENARIO, Mock
from support.messages import line
from support.process import mockmcp_cmd, own_pid
from support.messages import call, discover, listen

from mockmcp.controlclient import ControlError, SyncControl, WaitTimedOut

@pytest.fixture
def mock(tmp_path: Path) -> Any:
    m = Mock(tmp_path)
    yield m
    if m.proc.poll() is None:
        m.proc.kill()
        m.proc.wait()


def test_the_socket_is_the_owners_alone_and_there_is_no_tcp_listener(tmp_path: Path) -> None:
    mock = Mock(tmp_path, direct=True)  # (its own file descriptors are read below)
    try:
        st = os.stat(mock.path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        inodes = set()
        pid = own_pid(mock.proc.pid)
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except FileNotFoundError:  # a control connection's thread closed it meanwhile
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        assert inodes, "the mock holds its listening socket"
        for table in ("tcp", "tcp6", "udp", "udp6"):
            with open(f"/proc/{pid}/net/{table}") as f:
                listed = {row.split()[9] for row in f.read().splitlines()[1:]}
            assert not inodes & listed, f"a {table} socket"
        assert mock.close() == 0
        assert not os.path.exists(mock.path)  # removed at exit
    finally:
        if mock.proc.poll() is None:
            mock.proc.kill()
            mock.proc.wait()


def test_emit_and_definitions_reach_the_mcp_stream(mock):
    mock.send(listen(1, toolsListChanged=True))
    assert mock.read()["method"] == "notifications/subscriptions/acknowledged"
    assert mock.ctl.emit_tools_changed() == 1
    note = mock.read()
    assert note["method"] == "notifications/tools/list_changed"
    assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
    mock.ctl.add_tool({"name": "wave", "replies": [{"steps": [{"text": "o/"}]}]})
    assert mock.read()["method"] == "notifications/tools/list_changed"
    mock.send(call(2, "wave"))
    assert mock.read()["result"]["content"] == [{"type": "text", "text": "o/"}]


def test_bad_control_input_is_answered_on_the_channel_and_never_on_stdout(mock):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(mock.path)
        f = s.makefile("rwb")
        for bad in (b"not json\n", b"[1,2]\n", b'{"jsonrpc":"2.0","id":1,"method":"explode"}\n',
                    b'{"jsonrpc":"2.0","id":2,"method":"add","params":{"kind":"tool","definition":{"name":"x","inputSchema":{"type":"array"}}}}\n'):
            f.write(bad)
            f.flush()
            assert "error" in json.loads(f.readline())
    with pytest.raises(ControlError) as info:
        mock.ctl.remove_tool("nope")
    assert info.value.code == -32004
    assert mock.round_trip(1)["result"]["resultType"] == "complete"
    mock.send(call(2, "greet", who="x"))
    assert mock.read()["result"]["content"][0]["text"] == "hello x"  # the MCP stream is exactly as before


def test_a_flooding_client_and_one_that_leaves_mid_request_cannot_stall_the_mcp_stream(mock):
    flood = socket.socket(socket.AF_UNIX)
    flood.connect(mock.path)
    flood.setblocking(False)
    request = b'{"jsonrpc":"2.0","id":1,"method":"counters"}\n' * 1000
    sent = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # it never reads: its answers pile up until the mock stops reading it
        try:
            sent += flood.send(request)
        except BlockingIOError:
            break
    assert sent > 0
    leaver = socket.socket(socket.AF_UNIX)
    leaver.connect(mock.path)
    leaver.sendall(b'{"jsonrpc":"2.0","id":1,"method":"waitFor","params":{"when":{"method":"x"},"timeout":60}}\n{"jsonrpc":"2.0","id":2,"met')
    leaver.close()
    started = time.monotonic()
    for i in range(20):
        mock.round_trip(i)
    assert time.monotonic() - started < 5
    assert mock.ctl.get_state() == "start"  # other control clients are served too
    flood.close()


def test_a_client_that_floods_and_reads_cannot_starve_the_mcp_stream(mock):
    """A client whose lines are always waiting (it writes batches and reads every answer) keeps
    its thread at the core lock; the MCP side must still get its turn after each operation."""
    stop = threading.Event()
    answered = [0]

    def flood() -> None:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(mock.path)
            batch = b'{"jsonrpc":"2.0","id":1,"method":"journal","params":{"limit":50}}\n' * 200
            with s.makefile("rb") as f:
                while not stop.is_set():
                    s.sendall(batch)
                    for _ in range(200):
                        assert f.readline()
                    answered[0] += 200

    worker = threading.Thread(target=flood, daemon=True)
    worker.start()
    while answered[0] < 200:
        time.sleep(0.01)
    started = time.monotonic()
    for i in range(50):
        mock.round_trip(i)
    took = time.monotonic() - started
    stop.set()
    worker.join(10)
    assert answered[0] >= 400, answered  # the flood went on meanwhile
    assert took < 10, f"50 MCP round trips took {took:.1f} s beside the flood"


def test_several_clients_at_once_and_wait_for_from_another(mock):
    got: list[Any] = []
    since = mock.ctl.position()  # counted from here, however late the wait arrives: no race
    # 60 s: the wait ends as soon as the call is seen, the bound only stops a broken one (10 s was
    # not always enough for the waiter thread's connect and answer under a load of 10)
    failed: list[BaseException] = []

    def wait() -> None:
        try:
            got.append(SyncControl(mock.path, connect_timeout=60).wait_for("tools/call", name="greet", timeout=60, since=since))
        except BaseException as exc:  # shown by the assertion below, not lost in the thread
            failed.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    mock.send(call(7, "greet", who="w"))
    assert mock.read()["id"] == 7
    waiter.join(60)
    assert not failed, repr(failed)
    assert got and got[0]["id"] == 7 and got[0]["params"]["name"] == "greet"
    with pytest.raises(WaitTimedOut) as info:
        mock.ctl.wait_for("tools/call", name="greet", timeout=0.2, since=0, arguments={"who": "nobody"})
    assert info.value.data["nearMiss"]["id"] == 7


def test_pause_and_resume_reading_stdin(mock):
    mock.ctl.pause()
    mock.send(discover(1))
    assert mock.read(timeout=0.5) is None  # not read while paused
    mock.ctl.resume()
    assert mock.read()["id"] == 1


def test_a_pause_takes_no_byte_from_stdin_so_the_clients_writes_stop_at_the_pipes_capacity(mock):
    mock.ctl.pause()  # answered: the reader's wait in a read was cancelled
    assert mock.proc.stdin is not None
    fd = mock.proc.stdin.fileno()
    capacity = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    data = b"".join(line(discover(i)) for i in range(3 * capacity // len(line(discover(0)))))
    os.set_blocking(fd, False)
    written = 0
    for _ in range(2):  # full at once, and still full a moment later: nothing drains it
        with contextlib.suppress(BlockingIOError):
            while True:
                written += os.write(fd, data[written:])
        time.sleep(0.3)
    assert written <= capacity < len(data)
    os.set_blocking(fd, True)
    mock.ctl.resume()
    def write_rest() -> None:
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]

    rest = threading.Thread(target=write_rest)
    rest.start()  # (beside the reading below: the mock's answers would fill stdout otherwise)
    ids = [mock.read()["id"] for _ in range(data.count(b"\n"))]
    rest.join(30)
    assert ids == list(range(data.count(b"\n")))  # every request, in order, once


def test_graceful_shutdown_and_crash(tmp_path):
    m = Mock(tmp_path)
    assert m.ctl.shutdown() == {"mode": "graceful", "status": 0}
    assert m.proc.wait(10) == 0
    m2 = Mock(tmp_path)  # the path was removed: a new mock can listen there
    m2.send(call(1, "greet", who="a"))
    assert m2.read()["id"] == 1
    assert m2.ctl.shutdown(crash=True, status=7)["status"] == 7
    assert m2.proc.wait(10) == 7


def test_an_existing_path_is_refused_unless_a_stale_socket(tmp_path):
    path = tmp_path / "c.sock"
    path.write_text("mine")
    proc = subprocess.run(mockmcp_cmd("run", "default", "--control", str(path)), input=b"", capture_output=True, timeout=30)
    assert proc.returncode == 2 and b"exists and is not a socket" in proc.stderr
    assert path.read_text() == "mine"
    path.unlink()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # bound, never listening: what a killed mock leaves
    stale.close()
    m = Mock(tmp_path)  # takes the stale socket's place
    try:
        proc = subprocess.run(mockmcp_cmd("run", "default", "--control", m.path), input=b"", capture_output=True, timeout=30)
        assert proc.returncode == 2 and b"in use" in proc.stderr  # a live mock's socket is never taken over
        assert m.ctl.position() >= 0
    finally:
        m.close()


def test_two_mocks_starting_on_one_stale_socket_never_leave_a_dead_one_at_the_path(tmp_path, monkeypatch):
    """The second mock starts at the worst moment: after the first has bound its socket, before
    it is at PATH. Whoever ends up at PATH is listening there; the other refuses to start."""
    from mockmcp.shells import control as controlshell

    class NoShell:
        log = None

    class NoControl:
        outbound = None

    path = str(tmp_path / "c.sock")
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)
    stale.close()  # what a killed mock leaves behind
    first = controlshell.ControlServer(path, NoControl(), NoShell())  # type: ignore[arg-type]
    second = controlshell.ControlServer(path, NoControl(), NoShell())  # type: ignore[arg-type]
    real_link = os.link
    held: list[Any] = []

    def link(src: str, dst: str) -> None:
        if not held:
            held.append(None)
            held[0] = second.bind()  # the other mock, now (its own link is the real one)
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(controlshell.ControlPathError, match="appeared while the mock was starting"):
        first.bind()
    probe = socket.socket(socket.AF_UNIX)
    probe.connect(path)  # the survivor accepts at PATH
    probe.close()
    held[0].close()
    assert sorted(os.listdir(tmp_path)) == ["c.sock"]  # no temporary name left behind


def test_the_ctl_command_prints_the_response_and_exits_non_zero_on_an_error(mock, tmp_path):
    def ctl(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(mockmcp_cmd("ctl", *args), capture_output=True, timeout=30)

    mock.send(listen(1, toolsListChanged=True))
    assert mock.read()["method"] == "notifications/subscriptions/acknowledged"
    done = ctl(mock.path, "emit", "event=tools/list_changed")
    assert done.returncode == 0 and json.loads(done.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {"delivered": 1}}
    assert mock.read()["method"] == "notifications/tools/list_changed"
    done = ctl(mock.path, "add", "kind=tool", 'definition={"name": "w", "inputSchema": {"type": "array"}}')
    assert done.returncode == 1 and json.loads(done.stdout)["error"]["data"]["problems"][0]["path"] == "$.params.definition.inputSchema"
    done = ctl(mock.path, "setState", "state=ready")  # a value that is not JSON is a string
    assert done.returncode == 0 and json.loads(done.stdout)["result"]["state"] == "ready"
    done = ctl(str(tmp_path / "nowhere.sock"), "ping")
    assert done.returncode == 2 and b"cannot reach" in done.stderr
    # values JSON cannot carry, said before anything is sent (before: Infinity went out, or a traceback)
    for value, why in (("1e400", b"not a finite number"), ("NaN", b"not a finite number"), ("[" * 100_000, b"nested too deeply")):
        done = ctl(mock.path, "waitFor", f"timeout={value}")
        assert done.returncode == 2 and why in done.stderr and b"Traceback" not in done.stderr, done.stderr


def test_the_ctl_command_says_so_when_what_answers_is_not_a_mock(tmp_path):
    path = str(tmp_path / "other.sock")
    answers = [b"hello\n", b"[1, 2]\n", b'{"jsonrpc": "2.0"}\n']
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()

        def serve() -> None:
            for answer in answers:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return  # (the test ended early and closed the socket)
                with conn:
                    conn.recv(65536)
                    conn.sendall(answer)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        for _ in answers:
            done = subprocess.run(mockmcp_cmd("ctl", path, "ping"), capture_output=True, timeout=30)
            assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr
            assert b"answered with something that is not a JSON-RPC response" in done.stderr
        thread.join(10)


def test_a_wait_is_answered_for_a_request_read_before_its_task_runs(mock):
    """A match may arrive right after the waitFor line, before the wait's task first runs."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(mock.path)
        f = s.makefile("rwb")
        for i in range(30):
            wait = {"jsonrpc": "2.0", "id": i, "method": "waitFor", "params": {"when": {"method": "tools/call", "arguments": {"who": str(i)}}, "timeout": 5}}
            f.write(json.dumps(wait).encode() + b'\n{"jsonrpc":"2.0","id":"p","method":"ping"}\n')
            f.flush()
            assert b'"p"' in f.readline()
            mock.send(call(i, "greet", who=str(i)))
            started = time.monotonic()
            answer = json.loads(f.readline())
            assert answer["id"] == i and answer["result"]["message"]["id"] == i
            assert time.monotonic() - started < 2.5, "answered only at the wait's timeout"
            assert mock.read()["id"] == i


def test_the_peer_uid_is_read_and_clients_are_bounded(mock):
    from mockmcp.shells.control import MAX_CLIENTS, _peer_uid

    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert _peer_uid(a) == os.getuid()  # what the shell compares with its own uid
    held = []
    try:
        for _ in range(MAX_CLIENTS):
            s = socket.socket(socket.AF_UNIX)
            s.connect(mock.path)
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            assert b'"result"' in s.makefile("rb").readline()  # each one is being served
            held.append(s)
        extra = socket.socket(socket.AF_UNIX)
        extra.connect(mock.path)
        held.append(extra)
        refused = json.loads(extra.makefile("rb").readline())
        assert refused["error"]["code"] == -32000 and "too many control clients" in refused["error"]["message"]
    finally:
        for s in held:
            s.close()
    assert mock.round_trip(1)["id"] == 1
    deadline = time.monotonic() + 10
    while True:  # room again once the mock has seen them leave
        try:
            assert mock.ctl.position() > 0
            break
        except ControlError:
            assert time.monotonic() < deadline, "the slots of clients that left were not freed"
            time.sleep(0.05)


def test_with_a_session_directory_a_control_change_is_shared_at_once(tmp_path):
    """Under ``--session DIR`` an operation is handled as an input chunk is: inside the session's
    lock, after what other processes wrote, and written for them at once (not with this
    process's next input): a second process of the session sees a state set from the test
    before the first one reads another line, and what it changes is read before the next
    operation."""
    scenario = SCENARIO + """\
state: {initial: start, states: [start, ready]}
methods:
  - method: server/discover
    replies:
      - when: {state: ready}
        steps: [{result: {ready: true}}]
      - steps: [{setState: ready}, {result: {ready: false}}]
"""
    session = str(tmp_path / "session")
    first = Mock(tmp_path, "--session", session, scenario=scenario)
    try:
        assert first.ctl.set_state("ready") == "start"
        second = subprocess.Popen(mockmcp_cmd("run", str(tmp_path / "s.yaml"), "--session", session),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = second.communicate(line(discover(1)), timeout=30)
        assert json.loads(out.splitlines()[0])["result"]["ready"] is True, (out, err)
        first.ctl.set_state("start")
        second = subprocess.Popen(mockmcp_cmd("run", str(tmp_path / "s.yaml"), "--session", session),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = second.communicate(line(discover(2)), timeout=30)
        assert json.loads(out.splitlines()[0])["result"]["ready"] is False, (out, err)  # it set ready itself
        assert first.ctl.get_state() == "ready"  # what the other process wrote is read first
    finally:
        first.close()
