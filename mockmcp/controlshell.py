"""The control channel's trio shell: a Unix socket at PATH, several clients, bounded buffers.

``mockmcp run SCENARIO --control PATH`` listens here. The socket is created
with mode 0600 (a umask around ``bind``, then ``chmod``), a peer whose uid is
not ours is refused (``SO_PEERCRED``), and there is never a TCP listener. An
existing PATH is refused unless it is a stale socket of ours (a socket owned
by us that nobody accepts on, as a crashed mock leaves behind); the socket is
removed at exit.

Each client gets a thread (``_Client``) that reads its lines (framed with a
bound) and answers them in turn, running the core under ``CoreLock`` (held by
the trio thread except while it waits for I/O), so an operation costs the MCP
side no pass of trio's loop; what only the shell can do (write MCP lines,
pause, resume, shut down, park a wait) is handed to the trio thread. A client
that stops reading its answers fills its socket buffer and is then no longer
read, and nothing it does can block the MCP stream (the core's work per line is
synchronous and bounded; MCP lines go through the shell's own writer).
``waitFor`` parks in a trio task of its own, at most ``MAX_WAITS`` per client,
so a client may wait and operate at once. All protocol logic is in ``control``
(sans-I/O).
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import os
import socket as stdsocket
import stat
import struct
import threading
from typing import Any

import trio

from . import jsonrpc
from .control import Control, Effect, Outcome, Pause, Resume, Shutdown, Waiter
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


def _peer_uid(sock: stdsocket.socket) -> int | None:
    """The connecting process's uid (Linux ``SO_PEERCRED``); ``None`` where unsupported."""
    option = getattr(stdsocket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(stdsocket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return int(uid)


class CoreLock(trio.abc.Instrument):
    """The engine's lock between the trio thread and the control threads.

    The trio thread holds it always but while it waits for I/O (trio's
    ``before_io_wait``/``after_io_wait`` hooks), so a control thread runs core
    code only while the MCP side is idle, and the MCP side, when a line comes
    in, waits at most for the one control operation under way: ``turn`` is
    taken by whoever wants the lock next, and trio keeps it while it waits, so
    a thread that floods operations cannot take the lock back again and again
    before trio gets it (a plain lock is not fair). Nothing else is shared:
    every shell effect of a control operation is done in the trio thread
    (``trio.from_thread``), which holds the lock then.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.turn = threading.Lock()

    def before_io_wait(self, timeout: float) -> None:
        self.lock.release()

    def after_io_wait(self, timeout: float) -> None:
        with self.turn:
            self.lock.acquire()

    def __enter__(self) -> None:
        """A control thread's turn at the core (blocks while trio runs)."""
        with self.turn:
            self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


class _Client:
    """One connected client: a thread of its own that reads its lines and answers them in turn.

    A thread, not a trio task: an operation then costs this thread's blocking
    ``recv`` and ``send`` and no pass of trio's loop at all (measured: about a
    third of the CPU per operation of the trio task it replaced, which woke the
    loop once per operation), so 1,000 operations a second leave the MCP
    stream's loop alone; only operations with a shell effect (MCP lines to
    write, pause, resume, shutdown, a parked wait) go through the trio thread.
    A client that does not read its answers blocks only its own thread, in
    ``sendall``, and is then no longer read.
    """

    def __init__(self, sock: stdsocket.socket) -> None:
        self.sock = sock
        self.send_lock = threading.Lock()  # its thread and the wait answers' threads
        self.slots = threading.BoundedSemaphore(MAX_WAITS)
        self.waits: dict[Waiter, trio.CancelScope] = {}  # (trio thread only)
        self.gone = False

    def send(self, data: bytes) -> None:
        with self.send_lock:
            if self.gone:
                return
            try:
                self.sock.sendall(data)
            except OSError:
                self.gone = True  # nothing more can be answered; its reader sees the end too
                with contextlib.suppress(OSError):
                    self.sock.shutdown(stdsocket.SHUT_RDWR)


class ControlServer:
    """Listens on PATH and serves each control client against one ``Control`` core."""

    def __init__(self, path: str, control: Control, shell: Shell, *, log: Any = None) -> None:
        self.path = path
        self.control = control
        self.shell = shell
        self.log = log if log is not None else shell.log
        self.clients = 0
        self._count = threading.Lock()
        self.core = CoreLock()
        self.closed = False
        self.token: trio.lowlevel.TrioToken | None = None
        self.nursery: trio.Nursery | None = None
        shell.controllable = True
        shell.on_data = control.outbound

    def bind(self) -> stdsocket.socket:
        """Create the socket at PATH, mode 0600 from its first instant (raises ``ControlPathError``)."""
        prepare_path(self.path)
        sock = stdsocket.socket(stdsocket.AF_UNIX, stdsocket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(self.path)
        except OSError as exc:
            sock.close()
            raise ControlPathError(f"cannot listen on {self.path}: {exc.strerror}") from None
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        sock.listen(MAX_CLIENTS)
        sock.setblocking(False)
        return sock

    async def serve(self, sock: stdsocket.socket, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.attach)
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
                    self.start_client(conn)
        finally:
            self.unlink()
            sock.close()

    async def attach(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the core lock (released while trio waits for I/O) and keep the nursery of parked
        waits, until cancelled; then the control threads stop at the lock."""
        self.token = trio.lowlevel.current_trio_token()
        self.core.lock.acquire()
        trio.lowlevel.add_instrument(self.core)
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self.closed = True  # a control thread that gets the lock from here on does nothing more
            trio.lowlevel.remove_instrument(self.core)  # (the lock stays held: the threads stop there)

    def start_client(self, conn: stdsocket.socket) -> None:
        """Serve one connected client in a thread of its own (``attach`` runs)."""
        conn.setblocking(True)
        threading.Thread(target=self._client, args=(conn,), name="mockmcp-control", daemon=True).start()

    def unlink(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------ one client (its own thread)

    def _client(self, sock: stdsocket.socket) -> None:
        with sock:
            uid = _peer_uid(sock)
            if uid is not None and uid != os.getuid():
                self._from_trio(self.log, "warning", f"control: refused a client of uid {uid}")
                return
            with self._count:
                full = self.clients >= MAX_CLIENTS
                if not full:
                    self.clients += 1
            if full:
                msg = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": f"too many control clients (at most {MAX_CLIENTS})"}}
                sock.settimeout(1)
                _Client(sock).send(jsonrpc.encode(msg))
                return
            client = _Client(sock)
            try:
                self._reader(client)
            finally:
                with self._count:
                    self.clients -= 1
                client.gone = True
                self._from_trio(self._forget_waits, client)  # its parked waits go with it

    def _reader(self, client: _Client) -> None:
        """Read and answer lines in order; a ``waitFor`` parks in a trio task (the client goes on)."""
        framer = LineFramer(MAX_CONTROL_LINE)
        core = self.core
        while not client.gone:
            try:
                data = client.sock.recv(65536)
            except OSError:
                data = b""
            lines = framer.feed(data) if data else framer.close()
            for line in lines:
                if isinstance(line, bytes) and not line.strip():
                    continue  # a blank line
                with core:
                    if self.closed:
                        return
                    outcome = self.control.handle_line(line)
                if outcome.sends or outcome.effect is not None or outcome.waiter is not None:
                    if not self._perform(outcome, client):
                        return
                answer = outcome.line()
                if answer is not None:
                    client.send(answer)
            if not data:
                return

    def _from_trio(self, fn: Any, *args: Any) -> bool:
        """Run ``fn`` in the trio thread and wait for it; ``False`` once the mock is ending."""
        try:
            if inspect.iscoroutinefunction(fn):
                trio.from_thread.run(fn, *args, trio_token=self.token)
            else:
                trio.from_thread.run_sync(fn, *args, trio_token=self.token)
        except (trio.RunFinishedError, trio.Cancelled):
            return False
        return True

    def _perform(self, outcome: Outcome, client: _Client) -> bool:
        """The outcome's shell side (before its response is written); ``False``: the mock is ending."""
        if outcome.sends and not self._from_trio(self.shell.deliver, outcome.sends):
            return False
        effect = outcome.effect
        if isinstance(effect, Shutdown):
            answer = outcome.line()
            if answer is not None:
                client.sock.settimeout(1)  # the answer first (a client that does not read gets a second)
                client.send(answer)
                outcome.answered()
            self._from_trio(self._crash if effect.crash else self._effect, effect.status if effect.crash else effect)
            return False
        if effect is not None:
            self._from_trio(self._effect, effect)
        if outcome.waiter is not None:
            client.slots.acquire()  # at most MAX_WAITS parked: this reader waits for a free one
            if not self._from_trio(self._park, outcome.waiter, client):
                return False
        return True

    async def _crash(self, status: int) -> None:
        self.log("info", f"control: crash with status {status}")
        self.unlink()
        await self.shell.writer.send(ExitJob(status))

    def _effect(self, effect: Effect) -> None:
        match effect:
            case Pause():
                self.shell.pause_reading(effect.seconds)
            case Resume():
                self.shell.resume_reading()
            case Shutdown():
                self.log("info", "control: graceful shutdown")
                self.shell.stop()

    # ------------------------------------------------------------ parked waits (trio thread)

    def _park(self, waiter: Waiter, client: _Client) -> None:
        done = trio.Event()
        waiter.on_done = done.set
        if waiter.found is not None:  # matched between its line and now
            done.set()
        if client.gone:
            self.control.forget(waiter)
            client.slots.release()
            return
        scope = trio.CancelScope()
        client.waits[waiter] = scope
        assert self.nursery is not None  # (serve runs)
        self.nursery.start_soon(self._wait, waiter, done, client, scope)

    async def _wait(self, waiter: Waiter, done: trio.Event, client: _Client, scope: trio.CancelScope) -> None:
        try:
            with scope:
                with trio.move_on_after(waiter.timeout):
                    await done.wait()
                response = self.control.wait_response(waiter) if waiter.found is not None else self.control.timed_out(waiter)
                await trio.to_thread.run_sync(client.send, jsonrpc.encode(response), abandon_on_cancel=True)
        finally:
            client.waits.pop(waiter, None)
            self.control.forget(waiter)
            client.slots.release()

    def _forget_waits(self, client: _Client) -> None:
        for waiter, scope in list(client.waits.items()):
            scope.cancel()
            self.control.forget(waiter)
