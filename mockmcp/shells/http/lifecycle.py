"""Process-wide state of the HTTP shell: the graceful stop, ``exitAfter``, and the control
channel's pause of reading requests.

Each request is its own task, so what stdio keeps in its one loop is kept here,
shared: how many requests have scripted work left (a graceful stop gives them
``grace`` seconds), how many messages were written (``protocol.exitAfter``), and
until when no new request is read.
"""

from __future__ import annotations

import math
from typing import Callable

import trio

from mockmcp.core.actions import Plan
from mockmcp.shells.http.channel import Hold
from mockmcp.shells.http.taps import Taps
from mockmcp.shells.log import StderrLog

ExitProcess = Callable[[int], object]  # ends the process with a status (os._exit, or a test's stand-in)


class Lifecycle:
    """The graceful stop: ``stopping`` is set at stdin's EOF or by the control channel; then no more
    connections are accepted and requests with scripted work left get ``grace`` seconds."""

    def __init__(self, log: StderrLog, grace: float = 1.0) -> None:
        self.log = log
        self.grace = grace  # seconds scripted replies get to finish at a graceful stop (stdin's EOF, control)
        self.busy = 0  # requests with scripted work left (not parked, not listen streams)
        self.idle = trio.Event()
        self.stopping = trio.Event()  # a graceful stop was asked for (stdin's EOF, control shutdown)
        self._accepting: list[trio.CancelScope] = []

    def accepting(self) -> trio.CancelScope:
        """The scope of one accept loop, cancelled when the stop begins."""
        scope = trio.CancelScope()
        self._accepting.append(scope)
        return scope

    def take_busy(self, run: Hold, plan: Plan) -> None:
        if plan.method != "subscriptions/listen":  # (streams live until closed, as on stdio)
            run.busy = True
            self.busy += 1

    def not_busy(self, run: Hold) -> None:
        if run.busy:
            run.busy = False
            self.busy -= 1
            if self.busy == 0:
                self.idle.set()
                self.idle = trio.Event()

    async def drain(self) -> None:
        """A graceful stop: accept no more connections, give scripted replies ``grace`` seconds."""
        for scope in self._accepting:
            scope.cancel()
        if self.busy:
            self.log("debug", f"waiting up to {self.grace:g} s for {self.busy} scripted replies")
            with trio.move_on_after(self.grace):
                while self.busy:
                    await self.idle.wait()


class ExitCounter:
    """``protocol.exitAfter``, and every other way the process ends at once (``exit``, a crash)."""

    def __init__(self, log: StderrLog, exit_process: ExitProcess, exit_after: tuple[int, int] | None = None) -> None:
        self.log = log
        self.exit_process = exit_process
        self.exit_after = exit_after  # protocol.exitAfter: (messages, status)
        self.counting = exit_after is not None  # (checked before each await of count: the common case is off)
        self.messages_written = 0

    async def count(self, messages: int) -> None:
        """Exit right after the Nth message written (a JSON body or an SSE event)."""
        if self.exit_after is None:
            return
        self.messages_written += messages
        limit, status = self.exit_after
        if self.messages_written >= limit:
            self.log("info", f"exiting with status {status} after {limit} messages written (protocol.exitAfter)")
            await self.exit(status)

    async def exit(self, status: int) -> None:
        """End the process now (never returns: a stand-in ``exit_process`` leaves this task parked)."""
        self.exit_process(status)
        await trio.sleep_forever()


class ReadingGate:
    """The control channel's pause: no new HTTP request is read (on any connection) until resumed."""

    def __init__(self, log: StderrLog, taps: Taps) -> None:
        self.log = log
        self.taps = taps
        self.reading_resumes = 0.0  # trio time before which no new request is read (inf: until resumed)
        self._changed = trio.Event()

    def pause(self, seconds: float | None) -> None:
        self.reading_resumes = math.inf if seconds is None else trio.current_time() + seconds
        self.log("info", "stopped reading HTTP requests (control)" + ("" if seconds is None else f" for {seconds:g} s"))
        self.taps.event("stopReading", {"id": None, "seconds": seconds})

    def resume(self) -> None:
        self.reading_resumes = 0.0
        self._changed.set()
        self._changed = trio.Event()

    async def while_paused(self) -> float:
        """Wait while reading is paused; the seconds waited (not the client's delay)."""
        if self.reading_resumes <= trio.current_time():
            return 0.0
        paused = trio.current_time()
        while self.reading_resumes > trio.current_time():
            with trio.move_on_at(self.reading_resumes):
                await self._changed.wait()
        return trio.current_time() - paused
