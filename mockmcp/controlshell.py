"""The control channel's trio shell: a Unix socket at PATH, several clients, bounded buffers.

``mockmcp run SCENARIO --control PATH`` listens here. The socket is created
with mode 0600 (a umask around ``bind``, then ``chmod``), a peer whose uid is
not ours is refused (``SO_PEERCRED``), and there is never a TCP listener. An
existing PATH is refused unless it is a stale socket of ours (a socket owned
by us that nobody accepts on, as a crashed mock leaves behind); the socket is
removed at exit.

Each client gets a reader (lines framed with a bound) whose answers are written
in turn (``_Answers``): a client that stops reading its answers fills its
socket buffer and is then no longer read, and nothing it does can block the MCP
stream (the core's work per line is synchronous and bounded; MCP lines go
through the shell's own writer). ``waitFor`` parks in a task of its own, at
most ``MAX_WAITS`` per client, so a client may wait and operate at once.
All protocol logic is in ``control`` (sans-I/O).
"""

from __future__ import annotations

import errno
import os
import socket as stdsocket
import stat
import struct
from typing import Any

import trio

from . import jsonrpc
from .control import Control, Outcome, Pause, Resume, Shutdown, Waiter
from .framing import LineFramer
from .server import Shell
from .writer import ExitJob

MAX_CONTROL_LINE = 4 * 1024 * 1024  # like an MCP line: a definition may carry a large resource text
MAX_CLIENTS = 64  # control clients at once; more are answered with an error and closed
MAX_WAITS = 64  # parked waitFor requests per client (the reader waits for a free one)


class ControlPathError(Exception):
    """PATH cannot be used for the control socket (exists and is not a stale socket of ours)."""


def prepare_path(path: str) -> None:
    """Refuse an existing PATH unless it is a stale socket of ours (then remove it)."""
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


def _peer_uid(sock: trio.socket.SocketType) -> int | None:
    """The connecting process's uid (Linux ``SO_PEERCRED``); ``None`` where unsupported."""
    option = getattr(stdsocket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(stdsocket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return int(uid)


class _Answers:
    """The one way answers go to one client: written in turn (a lock, no extra task per line).

    A client that does not read fills the socket's buffer; the reader then waits in
    ``send`` and stops reading it (bounded, and only that client waits). A client
    that went away ends its reader and parked waits (``scope``)."""

    def __init__(self, stream: trio.SocketStream, scope: trio.CancelScope) -> None:
        self.stream = stream
        self.scope = scope
        self.lock = trio.Lock()

    async def send(self, data: bytes) -> None:
        async with self.lock:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.scope.cancel()


class ControlServer:
    """Listens on PATH and serves each control client against one ``Control`` core."""

    def __init__(self, path: str, control: Control, shell: Shell, *, log: Any = None) -> None:
        self.path = path
        self.control = control
        self.shell = shell
        self.log = log if log is not None else shell.log
        self.clients = 0
        shell.controllable = True
        shell.on_data = control.outbound

    async def bind(self) -> trio.socket.SocketType:
        """Create the socket at PATH, mode 0600 from its first instant (raises ``ControlPathError``)."""
        prepare_path(self.path)
        sock = trio.socket.socket(stdsocket.AF_UNIX, stdsocket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            await sock.bind(self.path)
        except OSError as exc:
            sock.close()
            raise ControlPathError(f"cannot listen on {self.path}: {exc.strerror}") from None
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        sock.listen(MAX_CLIENTS)
        return sock

    async def serve(self, sock: trio.socket.SocketType, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listener = trio.SocketListener(sock)
        try:
            async with trio.open_nursery() as nursery:
                task_status.started()
                while True:
                    stream = await listener.accept()
                    nursery.start_soon(self._client, stream)
        finally:
            self.unlink()
            with trio.CancelScope(shield=True):
                await listener.aclose()

    def unlink(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------ one client

    async def _client(self, stream: trio.SocketStream) -> None:
        async with stream:
            uid = _peer_uid(stream.socket)
            if uid is not None and uid != os.getuid():
                self.log("warning", f"control: refused a client of uid {uid}")
                return
            if self.clients >= MAX_CLIENTS:
                msg = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": f"too many control clients (at most {MAX_CLIENTS})"}}
                with trio.move_on_after(1):
                    try:
                        await stream.send_all(jsonrpc.encode(msg))
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
                return
            self.clients += 1
            waiters: set[Waiter] = set()
            try:
                async with trio.open_nursery() as nursery:
                    out = _Answers(stream, nursery.cancel_scope)
                    await self._reader(stream, out, nursery, waiters)
                    nursery.cancel_scope.cancel()  # its end: the client's parked waits go with it
            finally:
                self.clients -= 1
                for waiter in waiters:
                    self.control.forget(waiter)

    async def _reader(self, stream: trio.SocketStream, out: _Answers, nursery: trio.Nursery, waiters: set[Waiter]) -> None:
        """Read and answer lines in order; a ``waitFor`` parks in a task (the client goes on)."""
        framer = LineFramer(MAX_CONTROL_LINE)
        slots = trio.Semaphore(MAX_WAITS)
        while True:
            try:
                data = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            lines = framer.feed(data) if data else framer.close()
            for line in lines:
                if isinstance(line, bytes) and not line.strip():
                    continue  # a blank line
                outcome = self.control.handle_line(line)
                await self._perform(outcome, out)
                if outcome.waiter is not None:
                    await slots.acquire()
                    waiters.add(outcome.waiter)
                    nursery.start_soon(self._wait, outcome.waiter, out, slots, waiters)
            if not data:
                return

    async def _perform(self, outcome: Outcome, out: _Answers) -> None:
        if outcome.sends:
            await self.shell.deliver(outcome.sends)
        effect = outcome.effect
        if isinstance(effect, Shutdown) and effect.crash:
            if outcome.response is not None:
                with trio.move_on_after(1):  # the answer first (a client that does not read gets a second)
                    await out.send(jsonrpc.encode(outcome.response))
            self.log("info", f"control: crash with status {effect.status}")
            self.unlink()
            await self.shell.writer.send(ExitJob(effect.status))
            return
        match effect:
            case Pause():
                self.shell.pause_reading(effect.seconds)
            case Resume():
                self.shell.resume_reading()
            case Shutdown():
                self.log("info", "control: graceful shutdown")
                self.shell.stop()
        if outcome.response is not None:
            await out.send(jsonrpc.encode(outcome.response))

    async def _wait(self, waiter: Waiter, out: _Answers, slots: trio.Semaphore, waiters: set[Waiter]) -> None:
        done = trio.Event()
        waiter.on_done = done.set
        try:
            with trio.move_on_after(waiter.timeout):
                await done.wait()
            response = self.control.wait_response(waiter) if waiter.found is not None else self.control.timed_out(waiter)
            await out.send(jsonrpc.encode(response))
        finally:
            waiters.discard(waiter)
            self.control.forget(waiter)
            slots.release()
