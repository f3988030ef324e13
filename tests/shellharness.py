"""Run the real trio shell over in-memory streams (no process), with trio's clock.

Used where time or cancellation matters: tests run under pytest-trio with
``autojump_clock``, so scripted sleeps of seconds take no wall time while the
order and virtual timestamps of every written line stay exact.
"""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing

from mockmcp.connection import Connection
from mockmcp.engine import Engine
from mockmcp.run import new_engine
from mockmcp.loader import load, load_text
from mockmcp.server import Shell, StderrLog


def scenario_engine(name_or_yaml: str, **kw: Any) -> Engine:
    if "\n" in name_or_yaml:
        scenario, _ = load_text(name_or_yaml, "<test>")
    else:
        scenario, _ = load(name_or_yaml, use_cache=False)
    return new_engine(scenario, **kw)


class Harness:
    """A shell on memory streams: ``send`` lines in, ``next``/``until`` lines out."""

    def __init__(self, engine: Engine, *, log_level: str = "info", grace: float = 1.0) -> None:
        self.engine = engine
        self.stdin_send, stdin_recv = trio.testing.memory_stream_one_way_pair()
        self.stdout_send, self.stdout_recv = trio.testing.memory_stream_one_way_pair()
        stdout_send = self.stdout_send
        self.stderr: list[bytes] = []
        self.exits: list[int] = []
        self.shell = Shell(
            Connection(engine),
            stdin_recv,
            stdout_send,
            grace=grace,
            log=StderrLog(log_level, write=self.stderr.append),
            exit_process=self.exits.append,
        )
        # (virtual time, raw line) as written: a reader task drains stdout continuously
        self.lines: list[tuple[float, bytes]] = []
        self._out_send, self._out_recv = trio.open_memory_channel[Any](10_000)
        self.done = trio.Event()
        self.exit_status: int | None = None
        self.methods: dict[Any, str] = {}  # request id -> method, for schema checks of responses

    async def start(self, nursery: trio.Nursery) -> "Harness":
        async def serve() -> None:
            self.exit_status = await self.shell.serve()
            self.done.set()
            await self.stdout_send.aclose()  # the process would exit here: the reader sees EOF

        async def read() -> None:
            buffer = b""
            while True:
                chunk = await self.stdout_recv.receive_some()
                if not chunk:
                    await self._out_send.aclose()
                    return
                buffer += chunk
                while b"\n" in buffer:
                    raw, buffer = buffer.split(b"\n", 1)
                    self.lines.append((trio.current_time(), raw + b"\n"))
                    await self._out_send.send(json.loads(raw))

        nursery.start_soon(serve)
        nursery.start_soon(read)
        return self

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
            return await self._out_recv.receive()
        except trio.EndOfChannel:
            raise EOFError("stdout closed") from None

    async def until(self, predicate: Any) -> list[dict[str, Any]]:
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

    def check_all(self, schema: Any) -> None:
        """Validate every line written so far against the official schema."""
        for _, raw in self.lines:
            msg = schema.check_line(raw)
            if "id" in msg and "method" not in msg:
                schema.check(msg, self.methods.get(json.dumps(msg["id"])))

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode()


def response_to(rid: Any):
    return lambda m: m.get("id") == rid and ("result" in m or "error" in m)
