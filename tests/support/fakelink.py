"""A synchronous link to the real shell, for tests that think in request -> answer.

``FakeLink`` runs a ``Harness`` (the real ``Shell`` on memory streams, see
``shellharness.py``) under ``trio.run`` in a thread of its own, on a
``MockClock`` that only this link moves. ``send`` hands bytes to the shell and
returns once the shell has *settled*: every task is blocked and no deadline is
pending except parks, moving the virtual clock to each next deadline on the
way. So a reply scripted to come after sleeps is there when ``send`` returns,
with its virtual time in ``timeline``, and nothing more can come without more
input. No plan is interpreted here: the shell runs them, as in ``mockmcp run``.

Each link owns a thread: use it as a context manager, or import the autouse
fixture ``close_links`` into the test module, which closes every link a test
left open.
"""

from __future__ import annotations

import json
import math
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import outcome
import pytest
import trio
import trio.testing
from support.shellharness import Harness

from mockmcp.core.connection import Connection
from mockmcp.core.engine import Engine
from mockmcp.wire.framing import DEFAULT_MAX_LINE

_open: set["FakeLink"] = set()


class FakeLink:
    def __init__(self, engine: Engine, *, max_line: int = DEFAULT_MAX_LINE, grace: float = 1.0) -> None:
        self.engine = engine
        self._clock = trio.testing.MockClock()
        self._replies: queue.SimpleQueue[outcome.Outcome[None]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, args=(max_line, grace), name="FakeLink", daemon=True)
        self._thread.start()
        self._replies.get().unwrap()  # the harness is up (or its construction failed: raised here)
        _open.add(self)

    # ---------------------------------------------------------- what the tests use

    def send(self, *messages: Any) -> list[dict[str, Any]]:
        """Send messages (dicts, or raw bytes); return what the shell wrote until it settled."""
        before = len(self._harness.lines)
        self.feed(*messages)
        return [json.loads(raw) for _, raw in self._harness.lines[before:]]

    def feed(self, *messages: Any) -> None:
        """``send`` without parsing what was written (lies need not be JSON): see ``written``."""
        self._call(lambda: self._harness.send(*messages))

    def eof(self) -> list[dict[str, Any]]:
        """Close stdin; return what the shell wrote until it settled (it has exited by then,
        unless the scenario ignores EOF)."""
        before = len(self._harness.lines)
        self._call(self._harness.eof)
        return [json.loads(raw) for _, raw in self._harness.lines[before:]]

    @property
    def conn(self) -> Connection:
        return self._harness.shell.conn

    @property
    def written(self) -> list[bytes]:
        """Every line written, raw and in order, then an unfinished last line if there is one."""
        return [raw for _, raw in self._harness.lines] + ([self._harness.tail] if self._harness.tail else [])

    @property
    def timeline(self) -> list[tuple[float, bytes]]:
        """(virtual time, raw line) of every line written; time starts at 0 when the link opens."""
        return self._harness.lines

    @property
    def open(self) -> set[Any]:
        """Ids of the requests the shell still holds once settled: parked (hangs, subscription
        streams) or stopped by a scripted exit."""
        shell = self._harness.shell
        return set(shell.scopes) | set(shell.parked)

    @property
    def exits(self) -> list[int]:
        """Statuses the shell exited with (the process would be gone after the first)."""
        return self._harness.exits

    @property
    def stopped(self) -> bool:
        """The shell returned from ``serve`` (as after EOF, unless the scenario ignores it)."""
        return self._harness.done.is_set()

    @property
    def stderr(self) -> list[str]:
        """What the scenario wrote to stderr, one entry per write (the shell's own logs are off)."""
        return [chunk.decode() for chunk in self._harness.stderr]

    def close(self) -> None:
        """Stop the shell and join the thread (idempotent)."""
        _open.discard(self)
        if self._thread.is_alive():
            try:
                self._token.run_sync_soon(self._commands.send_nowait, None)
            except trio.RunFinishedError:
                pass  # the run already ended (a crash the caller has seen)
            self._thread.join()

    def __enter__(self) -> "FakeLink":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------- the trio thread

    def _run(self, max_line: int, grace: float) -> None:
        try:
            trio.run(self._main, max_line, grace, clock=self._clock)
        except BaseException as exc:  # the shell or the harness failed: the waiting call raises it
            self._replies.put(outcome.Error(_unwrap(exc)))

    async def _main(self, max_line: int, grace: float) -> None:
        commands_send, commands = trio.open_memory_channel[Callable[[], Awaitable[None]] | None](math.inf)
        async with trio.open_nursery() as nursery:
            self._harness = await Harness(self.engine, log_level="quiet", grace=grace, max_line=max_line).start(nursery)
            self._token = trio.lowlevel.current_trio_token()
            self._commands = commands_send
            self._replies.put(outcome.Value(None))
            async for command in commands:
                if command is None:
                    break
                await command()
                await self._settle()
                self._replies.put(outcome.Value(None))
            nursery.cancel_scope.cancel()

    async def _settle(self) -> None:
        """Return once every task is blocked and no deadline is pending, jumping the clock to
        each deadline meanwhile (the clock never moves by itself: between calls no time passes)."""
        while True:
            await trio.testing.wait_all_tasks_blocked()
            wait = trio.lowlevel.current_statistics().seconds_to_next_deadline
            if wait == math.inf:
                return
            self._clock.jump(max(wait, 0.0))

    def _call(self, command: Callable[[], Awaitable[None]]) -> None:
        self._token.run_sync_soon(self._commands.send_nowait, command)
        self._replies.get().unwrap()


def _unwrap(exc: BaseException) -> BaseException:
    """The one real error inside the nurseries' exception groups, for a readable failure."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@pytest.fixture(autouse=True)
def close_links() -> Iterator[None]:
    """Autouse where imported: close every link the test left open (no thread outlives its test)."""
    yield
    for link in list(_open):
        link.close()
    assert not [t for t in threading.enumerate() if t.name == "FakeLink"], "a FakeLink thread outlived its link"
