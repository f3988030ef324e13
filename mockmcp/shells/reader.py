"""The stdio shell's reader: stdin into the connection, in chunks, paused and stopped on request.

The reader never waits for a plan (``stdio`` says why): it hands each chunk's outputs to
the shell's dispatch and reads on. It pauses when a plan says ``stopReading`` (scripted
back-pressure) or the control channel says so, and stops (as at the end of stdin) when
the control channel stops the mock.

The control channel pauses and stops the reader also in the middle of a read: the reads
run in one cancel scope, renewed only after such an interruption, and the reader knows
whether it waits in a read right now (the only moment the scope may be cancelled: never
while it dispatches).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import trio

from mockmcp.core.actions import Output, StopReading
from mockmcp.core.connection import StdioConnection
from mockmcp.shells.log import StderrLog
from mockmcp.shells.observers import Observers
from mockmcp.shells.waits import TaskWake


class Dispatch(Protocol):
    """The shell's handling of what one chunk of input produced (plans to run, cancels, answers)."""

    async def __call__(self, outputs: list[Output], nursery: trio.Nursery, /) -> None: ...


class StdinReader:
    def __init__(self, stdin: trio.abc.ReceiveStream, conn: StdioConnection, dispatch: Dispatch, task_wake: TaskWake,
                 log: StderrLog, observers: Observers, *, read_size: int = 65536) -> None:
        self.stdin = stdin
        self.conn = conn
        self.dispatch = dispatch
        self.task_wake = task_wake
        self.log = log
        self.observers = observers
        self.read_size = read_size
        self.resumes = 0.0  # trio time before which the reader does not read (inf: never)
        self.stopped = False  # told to end as at the end of stdin
        self._scope: trio.CancelScope | None = None  # the run of reads now (see _reads)
        self._reading = False  # waiting in a read right now
        self._held: bytes | None = None  # a chunk read in the instant the reader was interrupted
        self._changed = trio.Event()

    # ---------------------------------------------------------- pauses and the stop

    def pause(self, seconds: float | None) -> None:
        """Stop reading now (the control channel; a read in progress is cancelled, no byte is lost)."""
        self.resumes = math.inf if seconds is None else trio.current_time() + seconds
        self._interrupt()
        self.log("info", "stopped reading stdin (control)" + ("" if seconds is None else f" for {seconds:g} s"))
        self.observers.event("stopReading", {"id": None, "seconds": seconds})

    def stop_reading(self, action: StopReading, rid: Any) -> None:
        """A plan's ``stopReading``: the next read waits (the one in progress, if any, is not cut)."""
        seconds = action.seconds
        self.resumes = math.inf if seconds is None else trio.current_time() + seconds
        self.log("info", "stopped reading stdin (scripted)" + ("" if seconds is None else f" for {seconds:g} s"))
        self.observers.event("stopReading", {"id": rid, "seconds": seconds})

    def resume(self) -> None:
        self.resumes = 0.0
        self._changed.set()
        self._changed = trio.Event()

    def stop(self) -> None:
        """End as at the end of stdin (pending work gets its grace)."""
        self.stopped = True
        self._interrupt()
        self.resume()

    def _interrupt(self) -> None:
        """Cancel the read the reader waits in, if it does (otherwise it sees the flags before its next)."""
        if self._reading and self._scope is not None:
            self._scope.cancel()

    # ---------------------------------------------------------- reading

    async def read_all(self, nursery: trio.Nursery) -> None:
        """Read and dispatch stdin until its end or a stop (waiting out pauses on the way)."""
        while not self.stopped:
            if self.resumes:
                await self._while_paused()
            elif await self._reads(nursery):
                return  # the end of stdin

    async def _reads(self, nursery: trio.Nursery) -> bool:
        """Read and dispatch stdin until its end (``True``) or a pause or stop (``False``).

        The whole run of reads is in one cancel scope, so a read costs no scope of its own
        (a new trio cancel scope per read cost the round trip about a fifth). The control
        channel cancels the scope only while the reader waits in ``receive_some``
        (``_reading``), which then either raises ``Cancelled`` before any byte is taken, or
        (woken with data just before the cancel) returns a chunk with no checkpoint after it:
        the chunk is held for after the pause (``_held``) and the scope is left before
        anything could see its cancellation, so a dispatch is never cancelled.
        """
        data = self._held
        self._held = None
        with trio.CancelScope() as scope:
            self._scope = scope
            while True:
                if data is None:
                    if self.resumes or self.stopped:
                        return False
                    self._reading = True
                    try:
                        data = bytes(await self.stdin.receive_some(self.read_size))
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        data = b""
                    finally:
                        self._reading = False
                    if scope.cancel_called:
                        self._held = data
                        return False
                if not data:
                    return True
                await self.dispatch(self.conn.receive_data(data), nursery)
                self.task_wake.after_input(self.conn.engine)
                data = None
        return False  # (the read was cancelled: nothing was taken)

    async def _while_paused(self) -> None:
        """Wait until a pause (scripted back-pressure, or the control channel's) ends or is resumed."""
        while self.resumes > trio.current_time():
            with trio.move_on_at(self.resumes):
                await self._changed.wait()
        self.resumes = 0.0  # (a timed pause that ended: the reader's check stays one test)


__all__ = ["Dispatch", "StdinReader"]
