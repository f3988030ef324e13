"""Shutdown signals: the one place a mockmcp process watches SIGINT and SIGTERM.

Every long-running command (``run`` on stdio or HTTP, ``proxy``, ``record``, ``record
--mode new_episodes``) stops promptly, and without a traceback, on SIGINT or SIGTERM: the
first one cancels the scope that serves, and the shell's own shutdown (a report, a cassette,
stopping the real server) then runs as after EOF. What differs between the shells is only how
long the handlers stay installed, so there are two forms:

- ``watch``: a task that installs the handlers, reports ``started`` (``nursery.start``: in
  place before the caller reads its first byte), cancels on the first signal and removes the
  handlers at once. A second signal then meets the disposition from before (the default
  action: the process ends at once, as a client that insists expects).
- ``shutdown_signals``: a context manager that installs the handlers for as long as it is
  open, yielding a ``Signals`` whose ``cancel_on_first`` is that task's body. Opened before the
  HTTP URL is printed (a suite that stops the mock as soon as it read the URL must find SIGTERM
  handled), or around a whole proxy session, shutdown included (a second SIGTERM while the
  real server is being stopped must not interrupt the stop). A signal that arrives while it is
  open but after the first is held, not acted on; when the block ends trio re-delivers it to
  the disposition from before (so it takes effect then, not midway through the shutdown).

``ignore_sigterm`` (the scenario's ``protocol.ignoreSigterm``) leaves SIGTERM's disposition as
it is: ``run`` sets it to ignored before serving.

``shutdown_under_way`` covers a whole ``run`` beneath those: a shutdown that end of file started
(the report still to write) must not die of the first signal that arrives meanwhile. A client that
closes stdin and sends SIGTERM at once (the TypeScript client does to its discover probe) asks for
what is already happening; the first such signal is absorbed, a second meets the disposition from
before, at once. A signal the watcher acted on counts as the first.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Protocol

import trio


class Log(Protocol):
    """Where the "received SIGX; shutting down" line goes (``StderrLog`` fits)."""

    def __call__(self, level: str, text: str) -> None: ...


def watched(ignore_sigterm: bool = False) -> tuple[signal.Signals, ...]:
    """The signals that shut a process down: SIGINT, and SIGTERM unless the scenario ignores it."""
    return (signal.SIGINT,) if ignore_sigterm else (signal.SIGINT, signal.SIGTERM)


class Signals:
    """The shutdown signals received while ``shutdown_signals`` is open."""

    def __init__(self, received: AsyncIterator[int]) -> None:
        self._received = received

    async def cancel_on_first(self, scope: trio.CancelScope, log: Log | None = None,
                              under_way: ShutdownUnderWay | None = None) -> None:
        """Wait for the first signal, log it (with ``log``), cancel ``scope`` and return
        (``under_way`` learns that the first signal was acted on).

        The handlers stay installed until the ``shutdown_signals`` block ends: a later signal
        is held until then and re-delivered to the disposition from before."""
        async for signum in self._received:
            if under_way is not None:
                under_way.first_taken = True
            if log is not None:
                log("info", f"received {signal.Signals(signum).name}; shutting down")
            scope.cancel()
            return


class ShutdownUnderWay:
    """Plain handlers beneath trio's for the shutdown signals (``shutdown_under_way``): once
    serving has ended (``ended``, set by the shell's runner), the first signal that reaches them is
    absorbed; any other one (during start-up, or a second) goes to the disposition from before."""

    def __init__(self, watched: tuple[signal.Signals, ...]) -> None:
        self.first_taken = False
        self.ended = False
        self.previous = {sig: signal.getsignal(sig) for sig in watched}

    def handle(self, signum: int, frame: object) -> None:
        if self.ended and not self.first_taken:
            self.first_taken = True  # a shutdown is under way already: this one asks for it
            return
        self.restore()
        signal.raise_signal(signum)  # what it meant before, at once

    def restore(self) -> None:
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)


@contextmanager
def shutdown_signals(ignore_sigterm: bool = False) -> Iterator[Signals]:
    """Install trio's handlers for the shutdown signals now, and keep them until the block ends."""
    with trio.open_signal_receiver(*watched(ignore_sigterm)) as received:
        yield Signals(received)


@contextmanager
def shutdown_under_way(ignore_sigterm: bool = False) -> Iterator[ShutdownUnderWay]:
    """For a whole process run (outside ``trio.run``): install ``ShutdownUnderWay``'s handlers
    and put the previous dispositions back when the block ends."""
    under_way = ShutdownUnderWay(watched(ignore_sigterm))
    for sig in under_way.previous:
        if under_way.previous[sig] is not signal.SIG_IGN:
            signal.signal(sig, under_way.handle)
    try:
        yield under_way
    finally:
        under_way.restore()


async def watch(scope: trio.CancelScope, *, log: Log | None = None, ignore_sigterm: bool = False,
                under_way: ShutdownUnderWay | None = None,
                task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """A task: install the handlers, report started, cancel ``scope`` on the first signal (logged
    with ``log``) and remove the handlers again (a second signal meets the previous disposition)."""
    with shutdown_signals(ignore_sigterm) as signals:
        task_status.started()
        await signals.cancel_on_first(scope, log, under_way)


__all__ = ["Log", "ShutdownUnderWay", "Signals", "shutdown_signals", "shutdown_under_way", "watch", "watched"]
