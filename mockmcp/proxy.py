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

import argparse
import json
import os
import signal
import sys
from typing import Any

import trio

from . import relay
from .actions import Dribble, Forward
from .framing import LineSplitter
from .log import StderrLog
from .proxycore import ProxyConnection
from .server import Shell, _hard_exit
from .writer import DribbleJob


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
        super().__init__(conn, stdin, stdout, **kwargs)  # type: ignore[arg-type]
        self.proxy = conn
        self.to_server = to_server
        self.owed: set[str] = set()  # forwarded requests the server has not answered (each counted busy)
        self.faulted: dict[str, tuple[str, Dribble | None]] = {}  # forwarded by a plan: how to deliver

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
                for item in self._delivered(line):
                    if type(item) is bytes:
                        batch.append(item)
                    else:
                        if batch:
                            await self.writer.send(b"".join(batch))
                            batch = []
                        await self.writer.send(item)
            if batch:
                await self.writer.send(b"".join(batch))
            if not data:
                return

    def _delivered(self, line: bytes) -> list[bytes | DribbleJob]:
        """What the client gets for one server line (the line itself, unless a rule said otherwise)."""
        msg: Any = None
        if self.owed or self.on_output is not None:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
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
            line = (json.dumps(msg, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        copies = 2 if how == "duplicate" else 1
        out: list[bytes | DribbleJob] = []
        for _ in range(copies):
            self._emit(msg, line)
            out.append(line if dribble is None else DribbleJob(line, dribble.chunk, dribble.pause))
        return out

    def _emit(self, msg: Any, line: bytes) -> None:
        if self.on_output is not None:
            self.on_output(msg, line)


def proxy(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    try:
        relay.check_command(cmd)
    except relay.CommandError as exc:
        print(f"mockmcp proxy: {exc}", file=sys.stderr)
        return 2
    if args.faults:
        from .loader import load
        from .problems import LoadError

        try:
            scenario, warnings = load(args.faults, allow_absolute=False, use_cache=False)
        except LoadError as exc:
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            return 2
    else:
        from .model import Protocol, Scenario

        # No faults file: a pass-through for either era (the client checks accept both).
        scenario, warnings = Scenario(mockmcp=1, protocol=Protocol(era="dual")), []
    from .run import _observers, new_engine

    log = StderrLog(args.log_level)
    for w in warnings:
        log("warning", str(w))
    engine = new_engine(scenario, seed=args.seed, time_scale=args.time_scale)
    conn = ProxyConnection(engine)
    observers = _observers(args, engine, conn, log)
    try:
        status = trio.run(_serve, cmd, conn, args, log, observers)
    except relay.CommandError as exc:
        print(f"mockmcp proxy: {exc}", file=sys.stderr)
        return 2
    finish = observers.get("finish")
    return finish(status) if finish is not None else status


async def _serve(cmd: list[str], conn: ProxyConnection, args: argparse.Namespace, log: StderrLog,
                 observers: dict[str, Any]) -> int:
    proc = await relay.start_server(cmd, args.startup_wait)
    assert proc.stdin is not None and proc.stdout is not None
    server_stdin, server_stdout = proc.stdin, proc.stdout
    to_server, from_proxy = trio.open_memory_channel[bytes](relay.CHANNEL_SIZE)

    def exit_process(status: int) -> None:  # a scripted exit takes the real server with it
        proc.kill()
        _hard_exit(status)

    shell = ProxyShell(
        conn, trio.lowlevel.FdStream(os.dup(0)), trio.lowlevel.FdStream(os.dup(1)), to_server,
        grace=args.grace, log=log, exit_process=exit_process,
        on_output=observers.get("output"), on_event=observers.get("event"),
    )
    status = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.drain, from_proxy, server_stdin)

        async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            await shell.serve(task_status=task_status)  # returns at client EOF, after the grace
            await to_server.aclose()  # the server sees EOF too
            with trio.move_on_after(0.5):
                await proc.wait()
            nursery.cancel_scope.cancel()

        async def server_side() -> None:
            nonlocal status
            await shell.relay_server(server_stdout)
            # the server closed its stdout (it exited): so does this session
            with trio.move_on_after(1.0):
                status = await proc.wait()
            log("info", f"the server ended (status {proc.returncode})")
            nursery.cancel_scope.cancel()

        async def signals() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                async for _ in received:
                    nursery.cancel_scope.cancel()
                    return

        nursery.start_soon(signals)
        await nursery.start(serve)
        nursery.start_soon(server_side)
    with trio.CancelScope(shield=True):
        await relay.stop(proc, 0.5)
    return status if status > 0 else 0


__all__ = ["proxy", "ProxyShell", "wrong_id"]
