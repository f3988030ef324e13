"""Bad input and faults against the warm server, through real processes: garbage, truncated and
abandoned hand-offs, 64 launchers at once, the server killed in the middle of a hand-off and
while its child runs, a stale socket. Never a hung client, never a leaked child, never a crash of
the server; and the pure parts (the hand-off's parser, the refusals no test process can cause)."""

from __future__ import annotations

import shutil
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fuzz import VALUES, mutated
from support.process import WarmServer, alive, client_world, gone_within, runtime_folder

from mockmcp.warm import handoff, launcher
from mockmcp.warm.refusals import Baseline, python_variables, refusal

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
DISCOVER = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}).encode() + b"\n"


def socket_of(warm: WarmServer) -> str:
    [path] = warm.folder.glob("*.sock")
    return str(path)


def spawn(warm: WarmServer) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*warm.argv, "run", "default"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=warm.env)


def answered(warm: WarmServer) -> int:
    """One spawn through the launcher: answered, exited 0; the pid of the child it was forked as (0 if none)."""
    proc = spawn(warm)
    out, err = proc.communicate(DISCOVER, timeout=30)
    assert proc.returncode == 0 and json.loads(out)["id"] == 1, err
    return warm.forked_for(proc.pid, timeout=2) or 0


def test_garbage_truncated_and_abandoned_hand_offs_leave_the_server_serving(warm: WarmServer) -> None:
    body = launcher.handoff_body(["run", "default"], os.getpid(), launcher.environment())
    attempts = [
        b"hello, garbage\n" * 10,  # not a hand-off
        launcher.frame(body)[:40],  # truncated, then gone
        struct.pack(">4sI", b"MMW1", 1 << 30),  # a length past the bound
        launcher.frame(b'{"argv": 1}'),  # well framed, wrong fields, no descriptors
        b"",  # connects and vanishes
    ]
    for data in attempts:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(socket_of(warm))
            sock.sendall(data)
    # a hand-off with the descriptors but a body of garbage: closed, nothing forked
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(socket_of(warm))
        r, w = os.pipe()
        socket.send_fds(sock, [launcher.frame(b"[" * 100000 + b"]" * 100000)], [r, w, w])
        sock.settimeout(10)
        assert sock.recv(100) == b""  # closed without an answer
        os.close(r)
        os.close(w)
    assert answered(warm)
    assert alive(warm.pid) and "Traceback" not in warm.log()
    assert warm.log().count("bad hand-off") >= 3


def test_64_launchers_at_once_all_answered_and_no_child_left(warm: WarmServer) -> None:
    procs = [spawn(warm) for _ in range(64)]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(DISCOVER)
        proc.stdin.close()
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.read()
        proc.wait(timeout=60)
        assert proc.returncode == 0 and json.loads(out)["id"] == 1, proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    forked = [warm.forked_for(p.pid, timeout=0) for p in procs]
    assert all(f is not None for f in forked), warm.log()[-2000:]
    assert all(gone_within(f, 5) for f in forked if f is not None)
    assert warm.children() == [] and alive(warm.pid)


def test_mocks_that_end_at_once_run_once_each(warm: WarmServer, tmp_path: Path) -> None:
    """A mock that ends before its launcher has finished sending (a scenario that is not there: one
    line, exit 2) may be reaped and its connection closed while the launcher is between two sends;
    the launcher must not take the closed connection for a refusal and run the mock again directly
    (seen as the line printed twice, under a few dozen spawns at once)."""
    import concurrent.futures

    missing = str(tmp_path / "missing.yaml")

    def one(_: int) -> tuple[int, bytes]:
        proc = subprocess.run([*warm.argv, "run", missing], env=warm.env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=60)
        return proc.returncode, proc.stderr

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        results = list(pool.map(one, range(64)))
    assert all(code == 2 for code, _ in results), results[:3]
    twice = [err for _, err in results if err.count(b"\n") != 1]
    assert not twice, twice[:3]
    assert warm.children() == [] and alive(warm.pid)


def waits_on_a_socket(pid: int, timeout: float = 10.0) -> bool:
    """Whether the launcher ``pid`` came to hold a socket (its hand-off's) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:") for fd in os.listdir(f"/proc/{pid}/fd")):
                return True
        except OSError:
            pass
        time.sleep(0.005)
    return False


@pytest.fixture
def doomed() -> Iterator[WarmServer]:
    """A warm server of its own, for a test that kills it."""
    server = WarmServer(runtime_folder())
    server.start()
    yield server
    server.stop()
    if alive(server.pid):
        os.kill(server.pid, signal.SIGKILL)
    shutil.rmtree(server.folder, ignore_errors=True)


def test_server_killed_mid_hand_off_and_while_a_child_runs_then_a_stale_socket(doomed: WarmServer) -> None:
    # a child running when the server dies goes with it, and its launcher ends (killed, as its child)
    running = spawn(doomed)
    assert running.stdin is not None and running.stdout is not None
    running.stdin.write(DISCOVER)
    running.stdin.flush()
    assert running.stdout.readline()
    child = doomed.forked_for(running.pid)
    assert child is not None
    # a launcher caught mid-hand-off: the server is stopped, it has sent its hand-off and waits
    os.kill(doomed.pid, signal.SIGSTOP)
    waiting = spawn(doomed)
    assert waits_on_a_socket(waiting.pid)
    os.kill(doomed.pid, signal.SIGKILL)
    assert gone_within(child, 1.0)
    running.wait(timeout=10)
    assert running.returncode == -signal.SIGKILL
    assert b"warm server went away" in running.stderr.read()  # type: ignore[union-attr]
    out, err = waiting.communicate(DISCOVER, timeout=30)  # ran directly after the server's end of file
    assert waiting.returncode == 0 and json.loads(out)["id"] == 1, err
    for proc in (running, waiting):
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    # the socket file is left behind: a launcher runs directly, `start` replaces it
    assert Path(socket_of(doomed)).exists()
    assert answered(doomed) == 0
    old = doomed.pid
    assert doomed.start() != old
    assert answered(doomed) != 0


def test_the_hand_off_parser_is_strict() -> None:
    body = launcher.handoff_body(["run", "x"], 42, {"PATH": "/bin", "ODD": "\udcff"})
    parsed = handoff.parse(body)
    assert parsed.argv == ("run", "x") and parsed.pid == 42 and parsed.env["ODD"] == "\udcff"
    value = json.loads(body)
    for broken in ({**value, "extra": 1}, {**value, "pid": "42"}, {**value, "cwd": "relative"},
                   {**value, "env": {"A": 1}}, {**value, "umask": 0o1000}, {**value, "limits": {"NOFILE": [1, 2]}},
                   {k: v for k, v in value.items() if k != "argv"}):
        with pytest.raises(handoff.BadHandoff):
            handoff.parse(json.dumps(broken).encode())
    for garbage in (b"", b"[]", b"\xff", b"{" * 5000):
        with pytest.raises(handoff.BadHandoff):
            handoff.parse(garbage)
    with pytest.raises(handoff.BadHandoff):
        handoff.body_length(b"NOPE\0\0\0\1")
    assert handoff.parse_signal(b'{"signal":15}') == 15
    assert [handoff.parse_signal(x) for x in (b'{"signal":0}', b'{"signal":true}', b"15", b"{" * 100)] == [None] * 4


def test_refusals_of_another_user_namespace_cgroup_and_limits(tmp_path: Path) -> None:
    """The refusals no unprivileged test process can provoke for real, on the same comparison."""
    me = os.getpid()
    mine = handoff.parse(launcher.handoff_body(["run"], me, launcher.environment()))
    read = Path(f"/proc/{me}/cgroup").read_text()
    ns = os.readlink(f"/proc/{me}/ns/mnt")
    base = Baseline(uid=os.getuid(), python=python_variables(os.environ),
                    encodings=mine.encodings, mount_ns=ns, cgroup=read, hard_limits={n: -1 for n in mine.limits},
                    package=str(tmp_path), stamp={})
    with open(os.devnull) as null:
        fd = null.fileno()
        peer = (me, os.getuid(), os.getgid())
        import dataclasses

        from mockmcp.warm.refusals import package_stamp

        base = dataclasses.replace(base, stamp=package_stamp(str(tmp_path)))
        assert refusal(base, mine, peer, fd) is None
        assert "uid" in (refusal(base, mine, (me, os.getuid() + 1, 0), fd) or "")
        assert "peer" in (refusal(base, mine, (1, os.getuid(), 0), fd) or "")
        assert "mount namespace" in (refusal(dataclasses.replace(base, mount_ns="mnt:[1]"), mine, peer, fd) or "")
        assert "cgroup" in (refusal(dataclasses.replace(base, cgroup="0::/elsewhere\n"), mine, peer, fd) or "")
        if os.getuid() != 0:
            low = dataclasses.replace(base, hard_limits={n: 1 for n in mine.limits})
            assert "hard limit" in (refusal(low, mine, peer, fd) or "")
        # an interpreter writing its bytecode beside the sources changes no source
        (tmp_path / "__pycache__").mkdir()
        (tmp_path / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"")
        assert refusal(base, mine, peer, fd) is None
        (tmp_path / "new.py").write_text("")
        assert "package changed" in (refusal(base, mine, peer, fd) or "")


def test_a_socket_path_past_the_limit_is_refused_clearly(tmp_path: Path) -> None:
    """``warm start`` in a folder whose socket path would be too long says so, with the limit and
    the length, before it starts anything (bind() would only say "AF_UNIX path too long")."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    env = {**os.environ, "MOCKMCP_WARM_DIR": str(deep)}
    env.pop("MOCKMCP_WARM_ARGV", None)
    proc = subprocess.run([sys.executable, "-m", "mockmcp", "warm", "start"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "a Unix socket path may have at most" in proc.stderr and "MOCKMCP_WARM_DIR" in proc.stderr, proc.stderr
    assert not list(deep.glob("*.pid"))


def test_start_leaves_a_server_that_holds_nothing_of_its_caller(tmp_path: Path) -> None:
    """``warm start`` run with warnings as errors (``-X dev -W error``) says only that the server
    runs: no warning that a subprocess is still running. The server it leaves runs from ``/`` (it
    must not hold the folder it was started from) and holds none of the caller's descriptors: a
    pipe handed to ``warm start`` reaches its end of file once ``warm start`` has exited."""
    folder = runtime_folder()
    env = {**client_world(os.environ), "MOCKMCP_WARM_DIR": str(folder)}
    env.pop("MOCKMCP_WARM_ARGV", None)
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.run([sys.executable, "-X", "dev", "-W", "error", "-m", "mockmcp", "warm", "start"], env=env,
                              cwd=tmp_path, pass_fds=(write_end,), capture_output=True, text=True, timeout=60)
        os.close(write_end)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        pid = int(re.search(r"pid (\d+)", proc.stdout).group(1))  # type: ignore[union-attr]
        assert alive(pid) and os.readlink(f"/proc/{pid}/cwd") == "/"
        readable, _, _ = select.select([read_end], [], [], 10)
        assert readable and os.read(read_end, 1) == b"", "the server holds the caller's pipe"
    finally:
        os.close(read_end)
        subprocess.run([sys.executable, "-m", "mockmcp", "warm", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("action", ["start", "argv"])
def test_a_relative_runtime_folder_is_refused(tmp_path: Path, action: str) -> None:
    """Clients spawn launchers from folders of their own and the server runs from ``/``: a relative
    ``MOCKMCP_WARM_DIR`` would name a different folder for each, so ``warm start`` and ``warm argv``
    refuse it and say why, and nothing is created."""
    env = {**os.environ, "MOCKMCP_WARM_DIR": "warm"}
    env.pop("MOCKMCP_WARM_ARGV", None)
    proc = subprocess.run([sys.executable, "-m", "mockmcp", "warm", action], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "warm is not an absolute path" in proc.stderr and "MOCKMCP_WARM_DIR" in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_starts_at_once_all_name_the_one_server() -> None:
    """Three ``warm start`` at once: one server listens, and each start prints its pid (a start
    whose own server lost the race to listen says the winner's, and ends its own). Once the winner
    is stopped no server of the folder is left: a loser still starting used to take the folder over
    (listening makes it anew), serving for good with nobody to stop it."""
    folder = runtime_folder()
    env = {**client_world(os.environ), "MOCKMCP_WARM_DIR": str(folder)}
    env.pop("MOCKMCP_WARM_ARGV", None)
    try:
        starts = [subprocess.Popen([sys.executable, "-m", "mockmcp", "warm", "start"], env=env, stdout=subprocess.PIPE,
                                   text=True) for _ in range(3)]
        pids = {int(re.search(r"pid (\d+)", s.communicate(timeout=60)[0]).group(1)) for s in starts}  # type: ignore[union-attr]
        [served] = folder.glob("*.pid")
        assert pids == {int(served.read_text())}, pids
        assert _servers_of(folder) == pids  # every start has returned: the losers are gone already
    finally:
        subprocess.run([sys.executable, "-m", "mockmcp", "warm", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
    assert _servers_of(folder) == set()


def _servers_of(folder: Path) -> set[int]:
    """The live ``warm serve`` processes whose environment names ``folder``."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"warm\0serve" in (entry / "cmdline").read_bytes() and alive(int(entry.name)) \
                    and f"MOCKMCP_WARM_DIR={folder}\0".encode() in (entry / "environ").read_bytes() + b"\0":
                found.add(int(entry.name))
        except OSError:
            pass
    return found


# ------------------------------------------------------------------ the socket, fuzzed

NEAR_MISSES = [None, True, 0, -1, 2**31 + 1, 2.5, "", "/", "relative", [], ["run"], {}, {"A": "b"}, {"RLIMIT_X": [1, 2]}]
PLAUSIBLE = {  # values of the right type a launcher did not send: a fork or a refusal, not a close
    "argv": [["--version"], ["run"]], "cwd": ["/", "/no/such/folder"], "umask": [0, 0o777],
    "env": [{}, {"PYTHONHASHSEED": "1"}, {"PATH": "/nowhere"}], "pid": [1, 2**31],
    "limits": [{}, {"RLIMIT_NOFILE": [64, 64]}, {"RLIMIT_NOFILE": [-1, -1]}, {"RLIMIT_NOPE": [1, 1]}],
    "ignored": [[], [15], [2]], "blocked": [[], [10, 15]], "encodings": [{}, {"fs": "latin-1"}],
}
OUTCOMES = ([], ["refused"], ["child", "status"])  # closed unanswered; refused; forked, then its status


@pytest.fixture(scope="module")
def spawn_encodings(warm: WarmServer) -> dict[str, str]:
    """The text encodings a launcher spawned by a test reports (this process's streams are pytest's)."""
    code = "import json; from mockmcp.warm import launcher; print(json.dumps(launcher.encodings()))"
    proc = subprocess.run([sys.executable, "-c", code], env=warm.env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.PIPE)
    encodings: dict[str, str] = json.loads(proc.stdout)
    return encodings


def as_launched(warm: WarmServer, encodings: dict[str, str], argv: list[str]) -> dict[str, Any]:
    """The hand-off a launcher spawned by a test would send, from this process (so the socket's
    peer is the pid it names)."""
    return {**json.loads(launcher.handoff_body(argv, os.getpid(), warm.env)), "encodings": encodings}


def hand_off(warm: WarmServer, payload: bytes, *, cuts: Sequence[int] = (), count: int = 3, fds_with: int = 0) -> list[str]:
    """Send ``payload`` cut at ``cuts``, ``count`` descriptors (the mock's stdin, then its stdout and
    stderr) riding on chunk ``fds_with``; the keys of the answers until the server closes the
    connection. A fork's child reads its end of file and ends: its status is the last answer."""
    chunks = [payload[a:b] for a, b in zip([0, *cuts], [*cuts, len(payload)]) if payload[a:b]]
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    fds = [stdin_r, out_w, out_w, stdin_r][:count]
    data = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(socket_of(warm))
        try:
            for i, chunk in enumerate(chunks):
                socket.send_fds(sock, [chunk], fds if i == fds_with else [])
        except OSError:
            pass  # (the server closed a bad one early)
        for fd in (stdin_r, out_w, stdin_w):
            os.close(fd)
        if count < 3 or len(payload) != HEADER_SIZE + struct.unpack_from(launcher.HEADER_FORMAT, payload)[1]:
            sock.shutdown(socket.SHUT_WR)  # incomplete: the server waits for the rest, so say there is none
        sock.settimeout(30)
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass  # (closed with bytes of ours unread: a bad hand-off)
    with os.fdopen(out_r, "rb") as out:
        out.read()
    return [next(iter(json.loads(x))) for x in data.splitlines()]


HEADER_SIZE = struct.calcsize(launcher.HEADER_FORMAT)


def serving(warm: WarmServer) -> None:
    assert alive(warm.pid) and "Traceback" not in warm.log(), warm.log()[-2000:]
    assert warm.children() == []


@pytest.mark.slow
def test_each_field_of_a_hand_off_broken_gets_a_fork_a_refusal_or_a_close(warm: WarmServer, spawn_encodings: dict[str, str]) -> None:
    """Every field of a launcher's hand-off in turn dropped, or replaced by each near miss (another
    JSON type, a value out of bounds) and by values of its type no launcher sent, plus a field
    added: each whole, with three descriptors. The server forks, refuses or closes; never more."""
    value = as_launched(warm, spawn_encodings, ["run", "default"])
    variants = [{**value, "extra": 1}]
    for name in value:
        variants.append({k: v for k, v in value.items() if k != name})
        variants += [{**value, name: other} for other in NEAR_MISSES + PLAUSIBLE[name]]
    seen = []
    for variant in variants:
        keys = hand_off(warm, launcher.frame(json.dumps(variant).encode()))
        assert keys in OUTCOMES, (variant, keys)
        seen.append(len(keys))
    assert set(seen) == {0, 1, 2}  # (each outcome was reached)
    serving(warm)
    assert answered(warm)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_hand_offs_never_end_the_server(warm: WarmServer, spawn_encodings: dict[str, str], data: st.DataObject) -> None:
    """A hand-off with any JSON in a field or a field of any name added, or a body of garbage, a
    header that lies about the length, 0 to 4 descriptors, cut into chunks anywhere: a fork, a
    refusal or a close, and the server serves on with no child left."""
    draw = data.draw
    argv = draw(st.sampled_from([["run", "default"], ["run", "no-such-scenario"], ["list"]]) | st.lists(st.text(max_size=6), max_size=3))
    value = as_launched(warm, spawn_encodings, argv)
    how = draw(st.sampled_from(["as sent", "field", "add", "garbage", "header", "descriptors"]))
    if how == "field":
        value[draw(st.sampled_from(sorted(value)))] = draw(VALUES)
    elif how == "add":
        value[draw(st.text(max_size=5))] = draw(VALUES)
    body = draw(mutated()) if how == "garbage" else json.dumps(value).encode()
    length = len(body)
    if how == "header":
        length = draw(st.sampled_from([0, max(0, len(body) - 3), len(body) + 3, launcher.MAX_BODY + 1, 2**32 - 1]))
    payload = struct.pack(launcher.HEADER_FORMAT, launcher.MAGIC, length) + body
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(payload) - 1)), max_size=3, unique=True)))
    count = draw(st.sampled_from([0, 1, 2, 4])) if how == "descriptors" else 3
    keys = hand_off(warm, payload, cuts=cuts, count=count, fds_with=draw(st.integers(0, len(cuts))))
    assert keys in OUTCOMES, (how, keys)
    assert not keys or (length == len(body) and count >= 3), (how, keys)  # (a fourth descriptor is cut off)
    serving(warm)
    if draw(st.integers(0, 4)) == 0:
        assert answered(warm)


def test_a_prefix_variable_no_exec_could_take_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """``MOCKMCP_WARM_ARGV`` is read by every spawner (the fixture, the demo, the helpers): what is
    not a list of strings an exec can take means "spawn directly", never a crash of the spawner."""
    from mockmcp.warm.paths import WARM_ARGV, prefix_from_env

    for text in ("garbage", "[" * 100_000, '"python"', "[]", '[1]', '[""]', '["py\\u0000thon"]', '["python", "a\\u0000"]'):
        monkeypatch.setenv(WARM_ARGV, text)
        assert prefix_from_env() is None, text
    monkeypatch.setenv(WARM_ARGV, '["/usr/bin/python3", "", "-c", "x"]')
    assert prefix_from_env() == ["/usr/bin/python3", "", "-c", "x"]


def test_stop_signals_only_a_proven_server_and_clears_a_stale_pid_file() -> None:
    """A pid file outlives a server killed by SIGKILL or the OOM killer, and its pid may be reused by
    any process: ``warm stop`` with no server there, whose pid file names a live unrelated process,
    leaves that process alone, says the server was not running, and removes the stale files."""
    from mockmcp.warm.launcher import server_name

    folder = runtime_folder()
    env = {**client_world(os.environ), "MOCKMCP_WARM_DIR": str(folder)}
    env.pop("MOCKMCP_WARM_ARGV", None)
    victim = subprocess.Popen(["sleep", "60"])
    try:
        pidfile = folder / f"{server_name()}.pid"
        pidfile.write_text(f"{victim.pid}\n")
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(folder / f"{server_name()}.sock"))  # bound, never listening: a dead server's socket
        stale.close()
        proc = subprocess.run([sys.executable, "-m", "mockmcp", "warm", "stop"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0 and "was not running" in proc.stdout, (proc.stdout, proc.stderr)
        time.sleep(0.2)
        assert victim.poll() is None, "warm stop signalled the process a stale pid file named"
        assert list(folder.iterdir()) == []
    finally:
        victim.kill()
        victim.wait()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_failed_fork_refuses_that_hand_off_alone_and_the_server_serves_on(tmp_path: Path) -> None:
    """A fork that fails (EAGAIN: a pids cgroup's or RLIMIT_NPROC's limit reached) crashed the
    server with a traceback, and its death SIGKILLed every mock it ran. Made real here with a
    server running as ``nobody`` (root ignores RLIMIT_NPROC) whose soft RLIMIT_NPROC is lowered
    below the processes ``nobody`` has: that launcher runs directly, a running mock runs on, and
    the server forks again once the limit is back."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running the warm server as nobody needs root and setpriv")
    nobody = 65534
    as_nobody = [str(shutil.which("setpriv")), f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups",
                 "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--"]
    if subprocess.run([*as_nobody, "/bin/true"], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("running a process as nobody is not permitted here")
    folder = runtime_folder()
    os.chown(folder, nobody, nobody)
    home = tmp_path / "nobody"
    home.mkdir()
    os.chown(home, nobody, nobody)
    env = {**client_world(os.environ), "MOCKMCP_WARM_DIR": str(folder), "HOME": str(home),
           "XDG_CACHE_HOME": str(home / "cache")}
    env.pop("MOCKMCP_WARM_ARGV", None)
    warm = [*as_nobody, sys.executable, "-m", "mockmcp", "warm"]
    bystander = None
    try:
        started = subprocess.run([*warm, "start"], env=env, cwd=home, capture_output=True, text=True, timeout=60)
        assert started.returncode == 0, started.stderr
        server = int(re.search(r"pid (\d+)", started.stdout).group(1))  # type: ignore[union-attr]
        prefix = [*as_nobody, *json.loads(subprocess.run([*warm, "argv"], env=env, cwd=home, capture_output=True,
                                                         text=True, timeout=60).stdout)]
        bystander = subprocess.Popen([*prefix, "run", "default"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=home)
        assert bystander.stdin is not None and bystander.stdout is not None
        bystander.stdin.write(DISCOVER)
        bystander.stdin.flush()
        assert json.loads(bystander.stdout.readline())["id"] == 1

        def limit(soft: str) -> None:  # (as nobody: this container's root may lack CAP_SYS_RESOURCE)
            code = f"import resource as r; h = r.prlimit({server}, r.RLIMIT_NPROC)[1]; r.prlimit({server}, r.RLIMIT_NPROC, ({soft}, h))"
            subprocess.run([*as_nobody, sys.executable, "-c", code], cwd=home, check=True, timeout=30)

        limit("1")  # nobody runs 2 processes or more already
        proc = subprocess.run([*prefix, "run", "default"], input=DISCOVER, env=env, cwd=home, capture_output=True,
                              timeout=60)
        assert proc.returncode == 0 and json.loads(proc.stdout)["id"] == 1, proc.stderr
        log = "".join(p.read_text(errors="replace") for p in folder.glob("*.log"))
        assert "cannot fork" in log and "Traceback" not in log, log
        assert alive(server) and bystander.poll() is None
        limit("h")  # (back to the hard limit)
        proc = subprocess.run([*prefix, "run", "default"], input=DISCOVER, env=env, cwd=home, capture_output=True,
                              timeout=60)
        assert proc.returncode == 0 and json.loads(proc.stdout)["id"] == 1, proc.stderr
        bystander.stdin.close()
        assert bystander.wait(timeout=30) == 0
    finally:
        subprocess.run([sys.executable, "-m", "mockmcp", "warm", "stop"], env=env, capture_output=True, timeout=60)
        if bystander is not None:
            bystander.kill()
            bystander.wait()
            for stream in (bystander.stdin, bystander.stdout, bystander.stderr):
                if stream is not None:
                    stream.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("case", ["no parent", "under a file", "a folder at the socket", "a file at the socket"])
@pytest.mark.parametrize("action", ["start", "serve"])
def test_a_runtime_folder_or_socket_path_that_cannot_be_used_is_refused_in_one_line(case: str, action: str) -> None:
    """A missing parent folder, a path under a regular file, a folder at the socket's path: one
    line that says what and what to do, exit status 2, no traceback; a file at the socket's path is
    refused too, never deleted."""
    from mockmcp.warm.launcher import server_name

    base = runtime_folder()
    folder = {"no parent": base / "nonexist" / "deeper", "under a file": base / "afile" / "deeper"}.get(case, base)
    (base / "afile").write_text("mine")
    sock = folder / f"{server_name()}.sock"
    if case == "a folder at the socket":
        sock.mkdir()
    elif case == "a file at the socket":
        sock.write_text("mine")
    env = {**client_world(os.environ), "MOCKMCP_WARM_DIR": str(folder)}
    env.pop("MOCKMCP_WARM_ARGV", None)
    try:
        proc = subprocess.run([sys.executable, "-m", "mockmcp", "warm", action], env=env, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("mockmcp warm: ") and "MOCKMCP_WARM_DIR" in proc.stderr, proc.stderr
        assert case != "a file at the socket" or sock.read_text() == "mine"
    finally:
        subprocess.run([sys.executable, "-m", "mockmcp", "warm", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def test_a_launcher_gone_before_its_hand_off_is_read_is_logged_as_gone(warm: WarmServer) -> None:
    """A launcher killed after it sent its hand-off but before the server read it: /proc has
    nothing left of it, which the log called 'another mount namespace'. It now says the launcher
    is gone. The server is stopped while the launcher sends and ends, so the order is certain."""
    sender = ("import os, socket, sys; from mockmcp.warm import launcher\n"
              "body = launcher.handoff_body(['run', 'default'], os.getpid(), launcher.environment())\n"
              "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1])\n"
              "socket.send_fds(s, [launcher.frame(body)], [0, 1, 2])\n")
    os.kill(warm.pid, signal.SIGSTOP)
    try:
        # (its standard streams ride with the hand-off, so a pipe of ours would stay open in the stopped server)
        proc = subprocess.Popen([sys.executable, "-c", sender, socket_of(warm)], env=warm.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert proc.wait(60) == 0  # (reaped: /proc has nothing of it when the server reads)
    finally:
        os.kill(warm.pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while warm.refused(proc.pid) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert warm.refused(proc.pid) == f"the launcher (pid {proc.pid}) is gone", warm.log()[-2000:]
    serving(warm)


def test_sighup_stops_the_server_as_sigterm_does_leaving_no_stale_files(doomed: WarmServer) -> None:
    """A ``warm serve`` whose terminal closes gets SIGHUP. It died of it at once, leaving its socket
    and pid file for the next start (and stop) to guess about; it now stops as for SIGTERM."""
    os.kill(doomed.pid, signal.SIGHUP)
    assert gone_within(doomed.pid, 10), doomed.log()[-2000:]
    assert "stopping (SIGHUP)" in doomed.log()
    assert not list(doomed.folder.glob("*.sock")) and not list(doomed.folder.glob("*.pid"))
