"""``mockmcp proxy [--faults FAULTS.yaml] -- CMD``: a real server behind our stdio, with faults in front.

The shell is the mock's own ``Shell`` (reader, a task per timed plan with its cancel
scope, the one stdout writer, EOF grace, ``--journal``/``--report``/``--strict``),
over a ``ProxyConnection`` instead of a ``Connection``: requests no fault rule takes
are passed to the real server at once, fault plans run as the mock runs any plan, and
a plan's ``forward`` step passes its request on at that point. What the server writes
goes through the same writer: answers to forwarded requests as their rule said
(delivered, dribbled, dropped, duplicated, or with a wrong id), everything else as is.
The answers the server still owes count as work in progress, so the EOF grace covers
them as it covers scripted replies.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

import trio

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.record import relay
from mockmcp.core.actions import Dribble, Forward
from mockmcp.wire.framing import LineSplitter
from mockmcp.shells.log import StderrLog
from mockmcp.record.proxy_connection import ProxyConnection
from mockmcp.shells.stdio import Shell, hard_exit
from mockmcp.shells.signals import Signals, shutdown_signals
from mockmcp.shells.writer import DribbleJob


DRAIN_WAIT = 2.0  # s the client gets to take the server's last output once the server has exited


def _key(rid: Any) -> str:
    return json.dumps(rid)


def wrong_id(rid: Any) -> Any:
    """An id the client did not use for this request (same type, so only its value is wrong)."""
    if type(rid) is int:
        return rid + 1_000_000 if rid >= 0 else rid - 1_000_000
    return f"{rid}-wrong"


class ProxyShell(Shell):
    def __init__(self, conn: ProxyConnection, stdin: trio.abc.ReceiveStream, stdout: trio.abc.SendStream,
                 to_server: trio.MemorySendChannel[bytes], **kwargs: Any) -> None:
        super().__init__(conn, stdin, stdout, **kwargs)
        self.proxy = conn
        self.to_server = to_server
        self.owed: set[str] = set()  # forwarded requests the server has not answered (each counted busy)
        self.faulted: dict[str, tuple[str, Dribble | None]] = {}  # forwarded by a plan: how to deliver
        self.client_gone = False  # the writer to the client is closed: server output is dropped

    def _owe(self, rid: Any) -> None:
        key = _key(rid)
        if key not in self.owed:
            self.owed.add(key)
            self.busy += 1

    def _paid(self, key: str) -> None:
        if key in self.owed:
            self.owed.discard(key)
            self._not_busy()

    async def _dispatch(self, outputs: list[Any], nursery: trio.Nursery) -> None:
        lines, owed, given_up = self.proxy.take_forward()
        for rid in owed:
            self._owe(rid)
        for rid in given_up:
            self._paid(_key(rid))
        if lines:
            await self._to_server(b"".join(lines))
        await super()._dispatch(outputs, nursery)

    async def _to_server(self, data: bytes) -> None:
        try:
            await self.to_server.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the server is gone; its end is reported by the reader of its stdout

    async def forward(self, action: Forward, rid: Any, dribble: Dribble | None) -> None:
        """A plan's ``forward`` step: pass its request on; its answer is delivered as ``action.how``
        says (dribbled if a ``dribble`` step came before)."""
        line = self.proxy.lines.pop(rid, None)
        if line is None:
            return
        self.faulted[_key(rid)] = (action.how, dribble)
        self._owe(rid)
        await self._to_server(line)

    async def relay_server(self, source: trio.abc.ReceiveStream) -> None:
        """Read the server's stdout to EOF and deliver it through the one writer."""
        splitter = LineSplitter()
        while True:
            try:
                data = await source.receive_some(relay.READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            lines = splitter.feed(bytes(data)) if data else splitter.close()
            batch: list[bytes] = []
            for line in lines:
                if self.client_gone:
                    self.log("debug", f"the client is gone; dropping a server line: {line[:200]!r}")
                    continue
                for item in self._delivered(line):
                    if type(item) is bytes:
                        batch.append(item)
                    else:
                        if batch:
                            await self._to_client(b"".join(batch))
                            batch = []
                        await self._to_client(item)
            if batch:
                await self._to_client(b"".join(batch))
            if not data:
                return

    async def _to_client(self, item: bytes | DribbleJob) -> None:
        """Queue ``item`` for the client. Once the session with the client is over (its stdin closed
        and the grace passed, so the writer is closed) the server can still write (notifications
        of its own, a late answer): that is dropped, and the server's stdout is still read to EOF,
        rather than the session failing and the report being lost."""
        if self.client_gone:
            return
        try:
            await self.writer.send(item)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.client_gone = True
            self.log("debug", "the client is gone; dropping what the server still writes")

    def _read(self, line: bytes) -> Any:
        """The server's line as a message, or ``None`` for a line that is not one.

        Decoded by the client side's own decoder (``jsonrpc.parse``: nesting, number and UTF-8
        limits), so nothing the real server writes can break a decoder or an encoder here; a
        line past those limits, or not JSON-RPC at all (an id no message may have), is passed
        on as it is and only said on the debug log (and journalled as raw output)."""
        try:
            msg = jsonrpc.parse(line)
        except errors.ClientError as exc:
            self.log("debug", f"passing on a server line that is not a message ({exc.message}): {line[:200]!r}")
            return None
        if type(msg) is dict and type(msg.get("id")) in (list, dict):
            self.log("debug", f"passing on a server line whose id is not a JSON-RPC id: {line[:200]!r}")
            return None
        return msg

    def _delivered(self, line: bytes) -> list[bytes | DribbleJob]:
        """What the client gets for one server line (the line itself, unless a rule said otherwise)."""
        msg: Any = None
        if self.owed or self.on_output is not None:
            msg = self._read(line)
        if type(msg) is not dict:
            if self.on_output is not None:
                self.on_output(None, line)
            return [line]
        fault = None
        if "id" in msg and "method" not in msg:
            key = _key(msg["id"])
            self._paid(key)
            fault = self.faulted.pop(key, None)
        if fault is None:
            self._emit(msg, line)
            return [line]
        how, dribble = fault
        if how == "drop":
            self._event("dropped", {"id": msg["id"]})
            return []
        if how == "wrong-id":
            msg = dict(msg, id=wrong_id(msg["id"]))
            line = jsonrpc.encode(msg)  # (a lone surrogate the server escaped stays escaped)
        copies = 2 if how == "duplicate" else 1
        out: list[bytes | DribbleJob] = []
        for _ in range(copies):
            self._emit(msg, line)
            out.append(line if dribble is None else DribbleJob(line, dribble.chunk, dribble.pause))
        return out

    def _emit(self, msg: Any, line: bytes) -> None:
        if self.on_output is not None:
            self.on_output(msg, line)


async def serve_proxy(cmd: list[str], conn: ProxyConnection, *, startup_wait: float, grace: float, log: StderrLog,
                      on_output: Callable[[Any, bytes], None] | None = None,
                      on_event: Callable[[str, dict[str, Any]], None] | None = None) -> int:
    """Start the real server ``cmd`` and serve our stdio through ``conn`` until either side ends
    (or a shutdown signal); ``relay.CommandError`` if the server cannot start."""
    proc = await relay.start_server(cmd, startup_wait)
    assert proc.stdin is not None and proc.stdout is not None
    server_stdin, server_stdout = proc.stdin, proc.stdout
    to_server, from_proxy = trio.open_memory_channel[bytes](relay.CHANNEL_SIZE)

    def exit_process(status: int) -> None:  # a scripted exit takes the real server with it
        proc.kill()
        hard_exit(status)

    shell = ProxyShell(
        conn, trio.lowlevel.FdStream(os.dup(0)), trio.lowlevel.FdStream(os.dup(1)), to_server,
        grace=grace, log=log, exit_process=exit_process, on_output=on_output, on_event=on_event,
    )
    # One signal receiver for the whole session, shutdown included: a SIGTERM while the real
    # server is being stopped (a client that gave up waiting for us to exit) must still let the
    # report be written, not kill the process with the default handler.
    with shutdown_signals() as received:
        try:
            return await _session(proc, shell, to_server, from_proxy, server_stdin, server_stdout, log, received)
        finally:
            with trio.CancelScope(shield=True):
                # The server had its 0.5 s after stdin closed (serve, below): terminate now. A
                # client that closes the pipe waits about 2 s before killing us (mcp's stdio
                # client), and the report is written after this. In a `finally`: whatever ended
                # the session, the server must not outlive us (it holds our stderr, which a
                # client may read to EOF: a crash here once left it running for a minute).
                await relay.stop(proc, 0.0)


async def _session(proc: trio.Process, shell: ProxyShell, to_server: trio.MemorySendChannel[bytes],
                   from_proxy: trio.MemoryReceiveChannel[bytes], server_stdin: trio.abc.SendStream,
                   server_stdout: trio.abc.ReceiveStream, log: StderrLog, received: Signals) -> int:
    status = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.drain, from_proxy, server_stdin)

        async def serve(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            await shell.serve(task_status=task_status)  # returns at client EOF, after the grace
            await to_server.aclose()  # the server sees EOF too
            with trio.move_on_after(0.5):
                await proc.wait()
            nursery.cancel_scope.cancel()

        async def server_side() -> None:
            nonlocal status
            await shell.relay_server(server_stdout)
            # the server closed its stdout (it exited): so does this session, once what the server
            # wrote last (queued for the writer just now, maybe without a newline) is written
            with trio.move_on_after(1.0):
                status = await proc.wait()
            log("info", f"the server ended (status {proc.returncode})")
            with trio.move_on_after(DRAIN_WAIT):
                await shell.writer.written()
            nursery.cancel_scope.cancel()

        nursery.start_soon(received.cancel_on_first, nursery.cancel_scope)
        await nursery.start(serve)
        nursery.start_soon(server_side)
    return status if status > 0 else 0


__all__ = ["ProxyShell", "serve_proxy", "wrong_id"]
