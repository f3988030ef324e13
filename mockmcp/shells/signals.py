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

    async def cancel_on_first(self, scope: trio.CancelScope, log: Log | None = None) -> None:
        """Wait for the first signal, log it (with ``log``), cancel ``scope`` and return.

        The handlers stay installed until the ``shutdown_signals`` block ends: a later signal
        is held until then and re-delivered to the disposition from before."""
        async for signum in self._received:
            if log is not None:
                log("info", f"received {signal.Signals(signum).name}; shutting down")
            scope.cancel()
            return


@contextmanager
def shutdown_signals(ignore_sigterm: bool = False) -> Iterator[Signals]:
    """Install trio's handlers for the shutdown signals now, and keep them until the block ends."""
    with trio.open_signal_receiver(*watched(ignore_sigterm)) as received:
        yield Signals(received)


async def watch(scope: trio.CancelScope, *, log: Log | None = None, ignore_sigterm: bool = False,
                task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """A task: install the handlers, report started, cancel ``scope`` on the first signal (logged
    with ``log``) and remove the handlers again (a second signal meets the previous disposition)."""
    with shutdown_signals(ignore_sigterm) as signals:
        task_status.started()
        await signals.cancel_on_first(scope, log)


__all__ = ["Log", "Signals", "shutdown_signals", "watch", "watched"]
