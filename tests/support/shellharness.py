"""Run the real trio shell over in-memory streams (no process), with trio's clock.

Used where time or cancellation matters: tests run under pytest-trio with
``autojump_clock``, so scripted sleeps of seconds take no wall time while the
order and virtual timestamps of every written line stay exact. ``fakelink.py``
drives this same harness from synchronous tests: there is one interpreter of
plans, the shell's.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Callable

import trio
import trio.testing
from support.messages import request

from mockmcp.core.connection import Connection
from mockmcp.core.engine import Engine
from mockmcp.wire.framing import DEFAULT_MAX_LINE
from mockmcp.shells.stdio import Shell, StderrLog

_probes = itertools.count(1)


class Harness:
    """A shell on memory streams: ``send`` lines in, ``next``/``until`` lines out.

    The shell is set up as ``mockmcp run`` sets it up for this scenario (``ignoreEof``,
    ``exitAfter``), except that exiting the process only records the status in ``exits``.
    """

    def __init__(self, engine: Engine, *, log_level: str = "info", grace: float = 1.0,
                 max_line: int = DEFAULT_MAX_LINE, timed_streams: bool = True,
                 on_data: Callable[[bytes], None] | None = None) -> None:
        self.engine = engine
        self.stdin_send, stdin_recv = trio.testing.memory_stream_one_way_pair()
        self.stdout_send, self.stdout_recv = trio.testing.memory_stream_one_way_pair()
        self.stderr: list[bytes] = []
        self.exits: list[int] = []
        protocol = engine.protocol
        exit_after = protocol.exitAfter
        self.shell = Shell(
            Connection(engine, max_line=max_line),
            stdin_recv,
            self.stdout_send,
            grace=grace,
            ignore_eof=protocol.ignoreEof,
            log=StderrLog(log_level, write=self.stderr.append),
            exit_process=self.exits.append,
            exit_after=None if exit_after is None else (exit_after.messages, exit_after.status),
            timed_streams=timed_streams,
            on_data=on_data,
        )
        # (virtual time, raw line) as written: a reader task drains stdout continuously, so
        # the shell never waits on its stdout; ``tail`` is a last line not (yet) ended.
        self.lines: list[tuple[float, bytes]] = []
        self.tail = b""
        self._out_send, self._out_recv = trio.open_memory_channel[bytes](math.inf)
        self.done = trio.Event()
        self.exit_status: int | None = None
        self.methods: dict[Any, str] = {}  # request id -> method, for schema checks of responses

    async def start(self, nursery: trio.Nursery) -> "Harness":
        nursery.start_soon(self._serve)
        nursery.start_soon(self._read)
        return self

    async def _serve(self) -> None:
        self.exit_status = await self.shell.serve()
        self.done.set()
        await self.stdout_send.aclose()  # the process would exit here: the reader sees EOF

    async def _read(self) -> None:
        """Record every line with its virtual time; ``next`` parses them (lies need not be JSON)."""
        while True:
            chunk = await self.stdout_recv.receive_some()
            if not chunk:
                await self._out_send.aclose()
                return
            *complete, self.tail = (self.tail + chunk).split(b"\n")
            for raw in complete:
                self.lines.append((trio.current_time(), raw + b"\n"))
                self._out_send.send_nowait(raw)

    async def send(self, *messages: Any) -> None:
        for m in messages:
            if isinstance(m, dict) and "id" in m and "method" in m:
                self.methods[json.dumps(m["id"])] = m["method"]
        data = b"".join(m if isinstance(m, bytes) else (json.dumps(m) + "\n").encode() for m in messages)
        await self.stdin_send.send_all(data)

    async def eof(self) -> None:
        await self.stdin_send.aclose()

    async def next(self) -> dict[str, Any]:
        """The next line the shell writes, parsed (waits for it)."""
        try:
            raw = await self._out_recv.receive()
        except trio.EndOfChannel:
            raise EOFError("stdout closed") from None
        msg: dict[str, Any] = json.loads(raw)
        return msg

    async def until(self, predicate: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Every message up to and including the first one ``predicate`` accepts."""
        out = []
        while True:
            msg = await self.next()
            out.append(msg)
            if predicate(msg):
                return out

    async def quiet_for(self, seconds: float) -> list[dict[str, Any]]:
        """Everything written during the next ``seconds`` (virtual)."""
        out: list[dict[str, Any]] = []
        with trio.move_on_after(seconds):
            while True:
                out.append(await self.next())
        return out

    async def silent_for(self, seconds: float) -> None:
        """Nothing is written for ``seconds`` (virtual), and the stream is still live: a probe
        sent afterwards gets the very next line. Without the probe, "nothing arrived" would
        also pass for a shell that stopped reading or writing altogether."""
        assert await self.quiet_for(seconds) == []
        await self.probe()

    async def probe(self) -> None:
        """Send ``server/discover`` with a fresh id and assert its answer is the next message
        (so nothing else was queued before it)."""
        rid = f"probe-{next(_probes)}"
        await self.send(request(rid, "server/discover"))
        with trio.move_on_after(10) as waited:  # virtual seconds on the autojump clock
            msg = await self.next()
        assert not waited.cancelled_caught, f"the probe {rid} got no answer: the shell stopped reading or writing"
        assert msg.get("id") == rid and ("result" in msg or "error" in msg), msg

    def check_all(self, schema: Any) -> None:
        """Validate every line written so far against the official schema."""
        for _, raw in self.lines:
            msg = schema.check_line(raw)
            if "id" in msg and "method" not in msg:
                schema.check(msg, self.methods.get(json.dumps(msg["id"])))

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode()


def response_to(rid: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m.get("id") == rid and ("result" in m or "error" in m)
