"""The control channel's trio shell: a Unix socket at PATH, several clients, bounded buffers.

``mockmcp run SCENARIO --control PATH`` listens here. The socket is created
with mode 0600 (a umask around ``bind``, then ``chmod``), a peer whose uid is
not ours is refused (``SO_PEERCRED``), and there is never a TCP listener. An
existing PATH is refused unless it is a stale socket of ours (a socket owned
by us that nobody accepts on, as a crashed mock leaves behind). At exit the
socket is removed only if PATH still names the very socket this process bound
(same device and inode, looked at with ``lstat`` just before the unlink): a file
put there since, or another mock's socket bound there after ours was removed,
is left alone.

Each client gets a reader (lines framed with a bound) whose answers are written
in turn (``_Client``): a client that stops reading its answers fills its
socket buffer and is then no longer read, and nothing it does can block the MCP
stream (the core's work per line is synchronous and bounded; MCP lines go
through the shell's own writer). ``waitFor`` parks in a task of its own, at
most ``MAX_WAITS`` per client, so a client may wait and operate at once.
All protocol logic is in ``control`` (sans-I/O).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket as stdsocket
import stat
import struct
import sys
from typing import Any, Callable, ContextManager, Protocol

import trio

from mockmcp.wire import jsonrpc
from mockmcp.core.actions import Send
from mockmcp.core.control import Control, Outcome, Pause, Resume, Shutdown, Waiter
from mockmcp.wire.framing import LineFramer
from mockmcp.shells.log import StderrLog

Sync = Callable[[], ContextManager[None]]  # the session's lock around one control operation

MAX_CONTROL_LINE = 4 * 1024 * 1024  # like an MCP line: a definition may carry a large resource text
MAX_CLIENTS = 64  # control clients at once; more are answered with an error and closed
MAX_WAITS = 64  # parked waitFor requests per client (the reader waits for a free one)
# The bytes a Unix socket's path may have: sun_path holds 108 on Linux, 104 on macOS and the BSDs,
# a terminating NUL included. A longer path fails in bind() with no errno ("AF_UNIX path too long").
MAX_SOCKET_PATH = 107 if sys.platform.startswith("linux") else 103


class Controlled(Protocol):
    """What the control channel needs of a shell: the stdio ``shells.stdio.Shell`` and ``shells.http.shell.HttpShell``."""

    log: StderrLog

    async def deliver(self, sends: list[Send]) -> None: ...  # events made by the control channel

    def pause_reading(self, seconds: float | None) -> None: ...

    def resume_reading(self) -> None: ...

    def stop(self) -> None: ...  # graceful: as at the end of stdin

    async def crash(self, status: int) -> None: ...  # exit at once with status


class ControlPathError(Exception):
    """PATH cannot be used for the control socket (exists and is not a stale socket of ours)."""


def prepare_path(path: str) -> None:
    """Refuse a PATH too long for a socket, or an existing PATH unless it is a stale socket of
    ours (then remove it)."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH:
        raise ControlPathError(
            f"cannot listen on {path}: a Unix socket path may have at most {MAX_SOCKET_PATH} bytes on this"
            f" system and this one has {size}; use a shorter path (for example /tmp/mock-1.sock;"
            " macOS temporary folders are long)")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ControlPathError(f"{path} exists and is not a socket; refusing to replace it")
    if st.st_uid != os.getuid():
        raise ControlPathError(f"{path} is a socket of another user; refusing to replace it")
    probe = stdsocket.socket(stdsocket.AF_UNIX, stdsocket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise ControlPathError(f"{path}: cannot tell whether it is in use ({exc.strerror})") from None
        os.unlink(path)  # stale: its mock is gone
        return
    finally:
        probe.close()
    raise ControlPathError(f"{path} is in use by a running process; refusing to replace it")


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _peer_uid(sock: stdsocket.socket) -> int | None:
    """The connecting process's uid (Linux ``SO_PEERCRED``); ``None`` where unsupported."""
    option = getattr(stdsocket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(stdsocket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return int(uid)


class _Client:
    """One connected client on a plain non-blocking socket, driven by trio's readiness waits.

    Plain sockets rather than ``trio.SocketStream``: an operation then costs one wait for
    input and no scheduler pass per send (the stream's send and receive each take one),
    which keeps 1,000 operations a second cheap beside the MCP stream. Answers are
    written in turn (``lock``): a client that does not read fills its socket buffer, and
    the writer then waits until it drains (only this client waits). ``scope`` ends the
    client's reader and parked waits when it goes away.
    """

    def __init__(self, sock: stdsocket.socket, scope: trio.CancelScope) -> None:
        self.sock = sock
        self.scope = scope
        self.lock = trio.Lock()

    async def receive(self) -> bytes:
        """The next chunk (``b""`` at the end), after a wait for input (so it always yields).

        The wait comes first: a client usually sends its next line only after reading the
        answer, so a read tried first would fail (an exception and a system call per
        operation); a client that has more input waiting finds it at the next pass."""
        while True:
            await trio.lowlevel.wait_readable(self.sock)
            try:
                return self.sock.recv(65536)
            except BlockingIOError:  # (readiness without data)
                continue
            except OSError:
                return b""

    async def send(self, data: bytes) -> None:
        """Write ``data`` whole, after the answers before it (a client that does not read waits alone)."""
        if not self.lock.locked():  # the usual case: the socket takes it all at once, no lock needed
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self.scope.cancel()  # gone: nothing more can be answered
                return
            if sent == len(data):
                return
            data = data[sent:]
            self.lock.acquire_nowait()  # (still free: nothing ran since the check)
        else:
            await self.lock.acquire()
        try:
            view = memoryview(data)
            while view:
                try:
                    view = view[self.sock.send(view) :]
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(self.sock)
        except OSError:
            self.scope.cancel()  # gone: nothing more can be answered
        finally:
            self.lock.release()


class ControlServer:
    """Listens on PATH and serves each control client against one ``Control`` core."""

    def __init__(self, path: str, control: Control, shell: Controlled, *, log: StderrLog | None = None,
                 sync: Sync | None = None) -> None:
        self.path = path
        self.control = control
        # With --session: a context manager around each operation (the session's lock, what other
        # processes wrote read first, what changed written after), as around each input chunk.
        self.sync = sync
        self.shell = shell
        self.log = log if log is not None else shell.log
        self.clients = 0
        self.bound: tuple[int, int] | None = None  # (device, inode) of the socket this process put at PATH

    def bind(self) -> stdsocket.socket:
        """Create the socket at PATH, mode 0600 from its first instant (raises ``ControlPathError``).

        It is bound and listening under a temporary name beside PATH first, then hard-linked to
        PATH, which fails if anything is there: PATH never names a socket that refuses
        connections (another mock starting on the same stale path would take it for stale and
        remove it), and nothing that appeared at PATH since the check is replaced."""
        prepare_path(self.path)
        tmp = os.path.join(os.path.dirname(self.path) or ".", f".mockmcp-{os.getpid()}-{os.urandom(3).hex()}")
        if len(os.fsencode(tmp)) > MAX_SOCKET_PATH:
            return self._listen_at_path()
        sock = self._listen(tmp, self.path)
        try:
            os.link(tmp, self.path)
            self.bound = _identity(os.lstat(tmp))  # (PATH is the same inode; tmp is ours alone to look at)
        except FileExistsError:
            sock.close()
            raise ControlPathError(f"{self.path} appeared while the mock was starting; refusing to replace it") from None
        except OSError:  # a file system without hard links to sockets: bound at PATH itself
            sock.close()
            return self._listen_at_path()
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return sock

    def _listen_at_path(self) -> stdsocket.socket:
        sock = self._listen(self.path)
        try:
            self.bound = _identity(os.lstat(self.path))
        except OSError:  # gone already: nothing of ours to remove at exit
            self.bound = None
        return sock

    @staticmethod
    def _listen(path: str, shown: str | None = None) -> stdsocket.socket:
        sock = stdsocket.socket(stdsocket.AF_UNIX, stdsocket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(path)
            os.chmod(path, 0o600)
            sock.listen(MAX_CLIENTS)
        except OSError as exc:
            sock.close()
            raise ControlPathError(f"cannot listen on {shown or path}: {exc.strerror or exc}") from None
        finally:
            os.umask(old)
        sock.setblocking(False)
        return sock

    async def serve(self, sock: stdsocket.socket, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                task_status.started()
                while True:
                    try:
                        conn, _ = sock.accept()
                    except BlockingIOError:
                        await trio.lowlevel.wait_readable(sock)
                        continue
                    except OSError as exc:  # out of file descriptors, say: try again later
                        self.log("warning", f"control: cannot accept a client ({exc.strerror})")
                        await trio.sleep(0.1)
                        continue
                    conn.setblocking(False)
                    nursery.start_soon(self._client, conn)
        finally:
            self.unlink()
            sock.close()

    def unlink(self) -> None:
        """Remove PATH if it still names the socket this process bound, and nothing else.

        Someone may have removed ours and put a file there, or another mock may have bound
        its own socket there since: those are not ours to delete. (The ``lstat`` is the last
        look before the unlink; a swap in between the two is the one window left.)"""
        bound, self.bound = self.bound, None
        if bound is None:
            return
        try:
            st = os.lstat(self.path)
        except OSError:
            return
        if not stat.S_ISSOCK(st.st_mode) or _identity(st) != bound:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    # ------------------------------------------------------------ one client

    async def _client(self, sock: stdsocket.socket) -> None:
        with sock:
            uid = _peer_uid(sock)
            if uid is not None and uid != os.getuid():
                self.log("warning", f"control: refused a client of uid {uid}")
                return
            if self.clients >= MAX_CLIENTS:
                msg = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": f"too many control clients (at most {MAX_CLIENTS})"}}
                with trio.move_on_after(1):
                    await _Client(sock, trio.CancelScope()).send(jsonrpc.encode(msg))
                return
            self.clients += 1
            waiters: set[Waiter] = set()
            try:
                async with trio.open_nursery() as nursery:
                    client = _Client(sock, nursery.cancel_scope)
                    await self._reader(client, nursery, waiters)
                    nursery.cancel_scope.cancel()  # its end: the client's parked waits go with it
            finally:
                self.clients -= 1
                for waiter in waiters:
                    self.control.forget(waiter)

    async def _reader(self, client: _Client, nursery: trio.Nursery, waiters: set[Waiter]) -> None:
        """Read and answer lines in order; a ``waitFor`` parks in a task (the client goes on)."""
        framer = LineFramer(MAX_CONTROL_LINE)
        slots = trio.Semaphore(MAX_WAITS)
        while True:
            data = await client.receive()
            lines = framer.feed(data) if data else framer.close()
            for i, line in enumerate(lines):
                if isinstance(line, bytes) and not line.strip():
                    continue  # a blank line
                if i:  # each further line of a batch after a yield: the MCP stream waits one operation at most
                    await trio.lowlevel.checkpoint()
                if self.sync is None:
                    outcome = self.control.handle_line(line)
                else:
                    with self.sync():
                        outcome = self.control.handle_line(line)
                waiter = outcome.waiter
                if waiter is not None:
                    # Hooked before anything yields: the awaited request may be read at the very
                    # next yield (the slot's, below), and its match must find someone to wake.
                    done = trio.Event()
                    waiter.on_done = done.set
                    waiters.add(waiter)
                    await slots.acquire()
                    nursery.start_soon(self._wait, waiter, done, client, slots, waiters)
                if outcome.sends or outcome.effect is not None:
                    await self._perform(outcome, client)
                else:  # the usual case (an answer and nothing else), without a coroutine for it
                    answer = outcome.line()
                    if answer is not None:
                        await client.send(answer)
            if not data:
                return

    async def _perform(self, outcome: Outcome, out: _Client) -> None:
        if outcome.sends:
            await self.shell.deliver(outcome.sends)
        effect = outcome.effect
        if isinstance(effect, Shutdown) and effect.crash:
            answer = outcome.line()
            if answer is not None:
                with trio.move_on_after(1):  # the answer first (a client that does not read gets a second)
                    await out.send(answer)
            self.log("info", f"control: crash with status {effect.status}")
            self.unlink()
            await self.shell.crash(effect.status)
            return
        match effect:
            case Pause():
                self.shell.pause_reading(effect.seconds)
            case Resume():
                self.shell.resume_reading()
            case Shutdown():
                self.log("info", "control: graceful shutdown")
                self.shell.stop()
        answer = outcome.line()
        if answer is not None:
            await out.send(answer)

    async def _wait(self, waiter: Waiter, done: trio.Event, out: _Client, slots: trio.Semaphore, waiters: set[Waiter]) -> None:
        try:
            with trio.move_on_after(waiter.timeout):
                await done.wait()
            response = self.control.wait_response(waiter) if waiter.found is not None else self.control.timed_out(waiter)
            await out.send(jsonrpc.encode(response))
        finally:
            waiters.discard(waiter)
            self.control.forget(waiter)
            slots.release()


def listen(path: str, control: Control, shell: Controlled, log: StderrLog,
           sync: Sync | None = None) -> tuple[ControlServer, stdsocket.socket] | None:
    """The ``--control PATH`` server bound for either shell, or ``None`` (the reason logged: exit 2).

    ``sync`` (with ``--session``): each operation runs in the session's lock, as each input chunk does."""
    server = ControlServer(path, control, shell, log=log, sync=sync)
    try:
        return server, server.bind()
    except ControlPathError as exc:
        log("error", f"--control: {exc}")
        return None
