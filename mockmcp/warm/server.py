"""The warm server: everything a run needs imported once, and a fork per hand-off.

A plain blocking loop over ``selectors`` (never trio: a fork from inside a running trio loop
would give the child a copy of the loop's state). Every connection is first a hand-off being
read (bounded in bytes and in time: ``HANDOFF_TIMEOUT``), then, once forked, the child's line:
``{"signal": N}`` lines are forwarded to the child while it lives, the launcher's hang-up kills
it, and its wait status goes back as the last line when it is reaped (SIGCHLD wakes the loop
through the signal wakeup fd). A bad hand-off closes its connection; a refused one is answered
``refused`` and closed; nothing a launcher does ends the server. SIGTERM or SIGINT stops it: the
socket goes at once, children get ``STOP_GRACE`` seconds to end, then SIGKILL. A changed package
retires it instead: the socket goes at once (the next spawn runs directly, or starts a new
server), and the server leaves when its last child ends: a mock already running keeps running the
code it started with, as a directly spawned one would when its files are edited.

A server started with a lifeline (``warm serve --lifeline FD``: the pytest plugin's run) watches
that pipe's read end, whose only write end its starter holds: at its end of file the starter is
gone, however it ended (SIGKILL, a CI step's time-out skip the run's own stop), so the server stops
as for SIGTERM and removes the folder the starter made for it.
"""

from __future__ import annotations

import gc
import math
import os
import random
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from mockmcp.warm import child as childmod
from mockmcp.warm.handoff import HEADER, BadHandoff, Handoff, answer, body_length, parse, parse_signal
from mockmcp.warm.paths import WarmPaths
from mockmcp.warm.refusals import CHANGED, Baseline, refusal

HANDOFF_TIMEOUT = 5.0  # a launcher that has not sent its whole hand-off by then is dropped
MAX_PENDING = 256  # hand-offs being read at once; past it a connection is closed (the launcher runs directly)
STOP_GRACE = 2.0
_PEERCRED = struct.Struct("3i")


@dataclass
class Conn:
    """One launcher's connection: its hand-off being read, then (``child``) its child's line."""

    sock: socket.socket
    peer: tuple[int, int, int]
    deadline: float
    data: bytearray = field(default_factory=bytearray)
    fds: list[int] = field(default_factory=list)
    child: int = 0


class WarmServer:
    def __init__(self, paths: WarmPaths, base: Baseline, generators: Sequence[random.Random],
                 run: childmod.Run, listener: socket.socket, lifeline: int | None = None) -> None:
        self.paths = paths
        self.lifeline, self.orphaned = lifeline, False  # a pipe's read end; stopped by its end of file
        self.base = base
        self.generators = generators
        self.run = run
        self.listener = listener
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.conns: dict[int, Conn] = {}  # by fd
        self.children: dict[int, Conn] = {}  # by pid
        self.stopping: float | None = None
        self.pid = os.getpid()

    def log(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} mockmcp warm[{self.pid}]: {text}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------ the loop

    def serve(self) -> int:
        for s in (self.wake_r, self.wake_w, self.listener):
            s.setblocking(False)
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # (SIGHUP: the terminal of a `warm serve` closed)
            signal.signal(sig, self.stop)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        self.selector.register(self.listener, selectors.EVENT_READ)
        if self.lifeline is not None:
            os.set_blocking(self.lifeline, False)
            self.selector.register(self.lifeline, selectors.EVENT_READ)
        gc.freeze()  # what is imported stays put: children share its pages copy-on-write
        self.log(f"listening on {self.paths.socket}")
        while True:
            now = time.monotonic()
            if self.stopping is not None and (not self.children or now >= self.stopping):
                break
            for key, _ in self.selector.select(_timeout(self.conns.values(), self.stopping, now)):
                if key.fileobj is self.wake_r:
                    self.drain_wakeups()
                elif key.fileobj is self.listener:
                    self.accept()
                elif key.fileobj == self.lifeline:
                    self.lifeline_readable()
                else:
                    conn = self.conns.get(key.fd)
                    if conn is not None:
                        self.readable(conn)
            self.expire(time.monotonic())
        for pid in list(self.children):
            self.kill(pid, signal.SIGKILL)
        self.reap(block=True)
        self.log("stopped")
        if self.orphaned:  # its starter made the folder for it alone, and would have removed it
            _remove(self.paths.log, self.paths.folder)  # (the folder only if nothing else is in it)
        return 0

    def stop(self, signum: int = 0, frame: object = None, why: str = "") -> None:
        """Stop serving: the socket goes, and the children get ``STOP_GRACE`` seconds and SIGTERM."""
        if self.stopping is not None and self.stopping != math.inf:
            return
        self.log(f"stopping ({why or signal.Signals(signum).name})")
        self.close_listener()
        self.stopping = time.monotonic() + STOP_GRACE
        for pid in list(self.children):
            self.kill(pid, signal.SIGTERM)

    def lifeline_readable(self) -> None:
        """At the lifeline's end of file its starter is gone, however it ended: stop (module docstring)."""
        if self.lifeline is None or not _at_end_of_file(self.lifeline):
            return
        self.selector.unregister(self.lifeline)
        os.close(self.lifeline)
        self.lifeline = None
        self.orphaned = True
        self.stop(why="the process that started it with a lifeline ended")

    def retire(self, why: str) -> None:
        """Stop taking hand-offs (the socket goes) and leave once the last child has ended."""
        if self.stopping is not None:
            return
        self.log(f"retiring ({why}); leaving after {len(self.children)} running child(ren)")
        self.close_listener()
        self.stopping = math.inf

    def close_listener(self) -> None:
        if self.listener.fileno() < 0:
            return
        self.selector.unregister(self.listener)
        self.listener.close()
        if _owns_pidfile(self.paths.pidfile, self.pid):  # (not a newer server's files)
            _remove(self.paths.socket, self.paths.pidfile)

    def drain_wakeups(self) -> None:
        try:
            while self.wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        self.reap(block=False)

    def accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and the like: the launcher waits, then runs directly
                self.log(f"accept: {exc}")
                return
            pending = sum(1 for c in self.conns.values() if not c.child)
            if pending >= MAX_PENDING:
                sock.close()
                continue
            sock.setblocking(False)
            peer = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
            conn = Conn(sock, peer, time.monotonic() + HANDOFF_TIMEOUT)
            self.conns[sock.fileno()] = conn
            self.selector.register(sock, selectors.EVENT_READ)

    def expire(self, now: float) -> None:
        for conn in [c for c in self.conns.values() if not c.child and c.deadline <= now]:
            self.log(f"dropped an unfinished hand-off from pid {conn.peer[0]}")
            self.close(conn)

    def close(self, conn: Conn) -> None:
        for fd in conn.fds:
            os.close(fd)
        conn.fds.clear()
        self.conns.pop(conn.sock.fileno(), None)
        try:
            self.selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    # ------------------------------------------------------------ one connection

    def readable(self, conn: Conn) -> None:
        if conn.child:
            self.child_line(conn)
            return
        try:
            chunk, fds, _, _ = socket.recv_fds(conn.sock, 65536, 3)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk, fds = b"", []
        conn.fds.extend(fds)
        if not chunk:
            self.close(conn)  # a launcher that connected and vanished
            return
        conn.data += chunk
        if len(conn.data) < HEADER.size:
            return
        try:
            length = body_length(bytes(conn.data[: HEADER.size]))
            if len(conn.data) < HEADER.size + length:
                return
            if len(conn.data) > HEADER.size + length or len(conn.fds) != 3:
                raise BadHandoff("trailing bytes or not three descriptors")
            handoff = parse(bytes(conn.data[HEADER.size:]))
        except BadHandoff as exc:
            self.log(f"bad hand-off from pid {conn.peer[0]}: {exc}")
            self.close(conn)
            return
        self.start(conn, handoff)

    def start(self, conn: Conn, handoff: Handoff) -> None:
        why = refusal(self.base, handoff, conn.peer, conn.fds[0])
        if why is None:
            try:
                pid, mask = _fork_masked()
            except OSError as exc:  # EAGAIN (a pids or process limit), ENOMEM: this hand-off alone runs directly
                why = f"the warm server cannot fork: {exc.strerror or exc}"
        if why is not None:
            self.log(f"refused pid {conn.peer[0]}: {why}")
            _send(conn.sock, answer("refused", why))
            self.close(conn)
            if why.startswith(CHANGED):
                self.retire(why)
            return
        if pid == 0:
            self.become_child(conn, handoff)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in conn.fds:
            os.close(fd)
        conn.fds.clear()
        conn.child = pid
        conn.data = bytearray()
        self.children[pid] = conn
        self.log(f"forked {pid} for pid {conn.peer[0]}")
        if not _send(conn.sock, answer("child", pid)):
            self.kill(pid, signal.SIGKILL)

    def become_child(self, conn: Conn, handoff: Handoff) -> None:
        """In the child: let go of the server's sockets without closing anything of the child's later."""
        self.selector.close()
        for other in [*(c.sock for c in self.conns.values() if c is not conn), self.listener, self.wake_r, self.wake_w]:
            try:
                os.close(other.detach())
            except OSError:
                pass
        conn.sock.setblocking(True)
        childmod.become(handoff, conn.fds, conn.sock.fileno(), self.generators, self.run, self.pid)

    def child_line(self, conn: Conn) -> None:
        try:
            chunk = conn.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # the launcher is gone (killed?): so must its child be
            self.kill(conn.child, signal.SIGKILL)
            self.selector.unregister(conn.sock)
            return
        conn.data += chunk
        while b"\n" in conn.data:
            line, _, rest = bytes(conn.data).partition(b"\n")
            conn.data = bytearray(rest)
            sig = parse_signal(line)
            if sig is not None:
                self.kill(conn.child, sig)
        if len(conn.data) > 4096:
            conn.data.clear()

    def kill(self, pid: int, sig: int) -> None:
        if pid in self.children:  # never a pid already reaped (and maybe reused)
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError, ValueError, OSError):
                pass

    def reap(self, block: bool) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                _send(conn.sock, answer("status", status))
                self.close(conn)


def _timeout(conns: Iterable[Conn], stopping: float | None, now: float) -> float | None:
    """How long the loop may wait: until the first hand-off's deadline, or the end of a stop's grace."""
    deadlines = [c.deadline for c in conns if not c.child]
    if stopping is not None and stopping != math.inf:  # (a retiring server waits for its children)
        deadlines.append(stopping)
    return max(0.0, min(deadlines) - now) if deadlines else None


def _fork_masked() -> tuple[int, set[int]]:
    """``os.fork()`` with every signal blocked across it, and the mask to restore.

    Without it the child starts with the server's handlers, and a signal meant for it (a
    launcher's SIGTERM, forwarded at once) would run the server's own stop in the child, which
    SIGTERMs every sibling in its copy of ``children`` and swallows the signal. The parent
    restores the mask at once; the child once its handlers are a fresh process's
    (``child.reset_signals``). A failed fork raises with the mask already restored.
    """
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        return os.fork(), mask
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise


def _send(sock: socket.socket, data: bytes) -> bool:
    """Send a short answer on a non-blocking socket (it always fits the socket's buffer)."""
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


def _owns_pidfile(path: str, pid: int) -> bool:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip() == str(pid)
    except OSError:
        return False


def _at_end_of_file(fd: int) -> bool:
    """Whether a non-blocking descriptor reads at its end (an error is as final); what it holds is dropped."""
    try:
        return not os.read(fd, 4096)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


def _remove(*paths: str) -> None:
    """Remove each file, or empty folder, that is still there."""
    for path in paths:
        try:
            (os.rmdir if os.path.isdir(path) else os.unlink)(path)
        except OSError:
            pass
