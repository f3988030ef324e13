"""The HTTP shell's surface for the control channel (``shells.control.Controlled``).

Pause and resume reading requests (``lifecycle.ReadingGate``), deliver the channel's
events onto the listen streams they name (``routing``), stop gracefully as at
stdin's EOF, crash at once, and a tap on every message written (``on_data``).
"""

from __future__ import annotations

from typing import Callable

from mockmcp.core.actions import Send
from mockmcp.shells.http.lifecycle import ExitCounter, Lifecycle, ReadingGate
from mockmcp.shells.http.seams import Routes
from mockmcp.shells.http.taps import Taps
from mockmcp.shells.log import StderrLog


class HttpControlled:
    def __init__(self, log: StderrLog, taps: Taps, gate: ReadingGate, routes: Routes, lifecycle: Lifecycle,
                 counter: ExitCounter) -> None:
        self.log = log
        self.taps = taps
        self.gate = gate
        self.routes = routes
        self.lifecycle = lifecycle
        self.counter = counter

    async def deliver(self, sends: list[Send]) -> None:
        """Messages made outside a plan (the control channel's events) onto the listen streams they name."""
        await self.routes.deliver_all(sends)

    def pause_reading(self, seconds: float | None) -> None:
        """Read no new HTTP request (on any connection) until resumed or ``seconds`` passed."""
        self.gate.pause(seconds)

    def resume_reading(self) -> None:
        self.gate.resume()

    def stop(self) -> None:
        """End as at the end of stdin (the control channel's graceful shutdown), whatever ``ignoreEof`` says."""
        self.lifecycle.stopping.set()
        self.gate.resume()

    async def crash(self, status: int) -> None:
        """The control channel's crash: exit at once with ``status``."""
        self.taps.event("exit", {"status": status, "id": None})
        await self.counter.exit(status)
