"""The one interpreter of plans, for both shells (stdio and Streamable HTTP).

A plan's actions mean the same on every transport: sleep, wait for a task change,
ask the client and wait for its answer, log to stderr, dribble what follows. What
differs is where the bytes of a message go (the one stdout writer, or the SSE
stream or JSON body of one POST) and what the transport makes of a park, an exit, a
closed stdout or an HTTP fault. So this module holds the ``match`` over the action
classes once, and a shell is a ``Transport``: the steps only it can perform. A new
action is one case here and one method in ``Transport``, which mypy then asks of
both shells.
"""

from __future__ import annotations

from typing import Any, Protocol

import trio

from mockmcp.wire import errors
from mockmcp.core.actions import (Action, Ask, CloseStdout, Dribble, Emit, Exit, Forward, HttpFault, Park, Send, Sleep, Stderr,
                      StopReading, WaitTasks, WriteRaw)
from mockmcp.shells.log import StderrLog
from mockmcp.shells.waits import TaskWake


class Run(Protocol):
    """A running plan as a shell keeps it: its request id and dribble setting (and the shell's own)."""

    rid: Any
    dribble: Dribble | None


class Transport(Protocol):
    """What a shell does for the actions whose meaning depends on the transport."""

    log: StderrLog
    task_wake: TaskWake

    async def send_step(self, send: Send, run: Any) -> None: ...  # one message, framed for the transport

    async def raw_step(self, data: bytes, run: Any) -> None: ...  # bytes as scripted (raw, rawBytes)

    async def emit_step(self, emit: Emit, run: Any) -> None: ...  # an event to the listen streams that want it

    async def park_step(self, run: Any) -> None: ...  # wait until cancelled (never returns)

    async def exit_step(self, exit: Exit, run: Any) -> None: ...  # end the process (never returns)

    def stop_reading_step(self, stop: StopReading, run: Any) -> None: ...

    async def close_step(self, close: CloseStdout, run: Any) -> None: ...  # stdout closed / connection dropped

    async def forward_step(self, forward: Forward, run: Any) -> None: ...  # to a real server (the proxy's)

    async def ask_step(self, ask: Ask, run: Any) -> None: ...  # a request to the client, waiting for its answer

    async def http_fault_step(self, fault: HttpFault, run: Any) -> None: ...


async def perform(shell: Transport, action: Action | None, run: Run) -> None:
    """One action of a plan (``None``: a lazy loop's checkpoint, work done and nothing to write)."""
    match action:
        case None:
            await trio.lowlevel.checkpoint()
        case Send():
            await shell.send_step(action, run)
        case Sleep():
            await trio.sleep(action.seconds)
        case Emit():
            await shell.emit_step(action, run)
        case Park():
            await shell.park_step(run)
        case WriteRaw():
            await shell.raw_step(action.data, run)
        case Exit():
            await shell.exit_step(action, run)
        case Dribble():
            run.dribble = action
        case StopReading():
            shell.stop_reading_step(action, run)
        case CloseStdout():
            await shell.close_step(action, run)
        case WaitTasks():
            await shell.task_wake.wait(action)
        case Forward():
            await shell.forward_step(action, run)
        case Ask():
            await shell.ask_step(action, run)
        case Stderr():
            for _ in range(action.repeat):
                shell.log.raw(action.text if action.text.endswith("\n") else action.text + "\n")
                await trio.lowlevel.checkpoint()
        case HttpFault():
            await shell.http_fault_step(action, run)


def no_real_server(rid: Any) -> dict[str, Any]:
    """The answer to a ``forward`` step outside ``mockmcp proxy``: there is no real server to forward to."""
    return errors.error_response(rid, -32603, "mockmcp: a forward step needs a real server (mockmcp proxy)")


__all__ = ["Run", "Transport", "no_real_server", "perform"]
