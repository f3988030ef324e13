"""A fork server for the suite's real MCP servers (``tests/servers/*.py``), and its launcher.

Importing the official Python SDK costs a process about 1.5 CPU s on the suite's machine, and the
record and proxy tests start its server (and fastmcp's) some twenty times a run. One zygote per
worker imports both once (``zygote`` fixture, tests/conftest.py); a test's server command
(``command``) runs this file as a launcher, which hands its stdin, stdout and stderr to a fork of
the zygote that runs the script as ``__main__``, passes on the signals it gets, and exits as the
fork exits. The fork is the real server in a process of its own, with the launcher's arguments,
folder and environment; it dies with the launcher, even by SIGKILL (its connection closes).
Without a zygote at the socket (none started, or a client that spawned the command elsewhere)
the launcher replaces itself with the script: the same server, spawned directly.
"""

from __future__ import annotations

import array
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import tempfile
import threading
import traceback
from pathlib import Path

SERVERS = Path(__file__).resolve().parents[1] / "servers"
SOCKET = os.path.join(tempfile.gettempdir(), f"mockmcp-test-zygote-{os.getpid()}.sock")  # this worker's
PRELOAD = ("mcp.server.mcpserver", "mcp.server.mcpserver.resolve", "fastmcp")
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_HEADER = struct.Struct("!I")


def command(script: str) -> list[str]:
    """The command that serves ``tests/servers/<script>``: through this worker's zygote when it runs."""
    return [sys.executable, __file__, SOCKET, str(SERVERS / script)]


# ---------------------------------------------------------------- the launcher


def launch(path: str, argv: list[str]) -> int:
    """Have the zygote at ``path`` run ``argv`` (a script and its arguments) on this process's
    stdio; the fork's exit status, or a signal's conventional one after dying by it too."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:  # no zygote there: be the server itself
        os.execv(sys.executable, [sys.executable, *argv])
    body = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    sock.sendmsg([_HEADER.pack(len(body)) + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the fork holds them now: its reader sees its end of file, not ours
        os.dup2(null, fd)
    replies = sock.makefile("rb")
    pid = int(replies.readline())
    for signum in FORWARDED:
        signal.signal(signum, lambda signum, frame: os.kill(pid, signum))
    how, _, number = replies.readline().decode().partition(" ")
    if how == "signal":
        signal.signal(int(number), signal.SIG_DFL)
        os.kill(os.getpid(), int(number))
        return 128 + int(number)
    return int(number) if how == "exit" else 1  # (nothing: the zygote itself went away)


# ---------------------------------------------------------------- the zygote


def serve(path: str) -> None:
    """Import the SDKs, then fork a server for each launcher that connects, until SIGTERM."""
    for name in PRELOAD:
        __import__(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    listener.bind(path)
    listener.listen(64)
    children: dict[int, socket.socket] = {}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    conn, _ = listener.accept()
                    pid = _fork(conn, listener)
                    children[pid] = conn
                else:
                    os.read(wake_r, 512)
            _reap(children)
    finally:
        os.unlink(path)


def _reap(children: dict[int, socket.socket]) -> None:
    """Tell each launcher whose fork has exited how it ended."""
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:  # (not a fork of ours)
            continue
        code = os.waitstatus_to_exitcode(status)
        try:
            conn.sendall(b"signal %d\n" % -code if code < 0 else b"exit %d\n" % code)
        except OSError:  # the launcher is gone (killed): nobody to tell
            pass
        conn.close()


def _fork(conn: socket.socket, listener: socket.socket) -> int:
    """Receive a launcher's request and start its fork; the fork's pid."""
    fds = array.array("i")
    data, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    (size,) = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    while len(body) < size:
        body += conn.recv(size - len(body))
    request = json.loads(body)
    pid = os.fork()
    if pid == 0:
        _child(conn, listener, list(fds), request)
    for fd in fds:
        os.close(fd)
    conn.sendall(b"%d\n" % pid)
    return pid


def _child(conn: socket.socket, listener: socket.socket, fds: list[int], request: dict[str, object]) -> None:
    """In the fork: take the launcher's stdio, folder, environment and arguments, run the script,
    and never return into the zygote's loop (every way out is ``os._exit``)."""
    code = 1
    try:
        listener.close()
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update(request["env"])  # type: ignore[arg-type]
        sys.argv = list(request["argv"])  # type: ignore[call-overload]
        threading.Thread(target=_die_with_launcher, args=(conn,), daemon=True).start()
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 (the script's own failure: shown, as Python shows it)
            traceback.print_exc()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass
    finally:
        os._exit(code)


def _die_with_launcher(conn: socket.socket) -> None:
    """The launcher never writes after its request: its end of file means it is gone."""
    while conn.recv(1):
        pass
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        sys.exit(launch(sys.argv[1], sys.argv[2:]))
