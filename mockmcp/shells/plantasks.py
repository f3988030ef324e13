"""The requests the stdio shell holds open outside the timer heap, and the steps their plans perform.

A plan the timer heap does not run (``streams``) runs in a trio task of its own, with its
own cancel scope, so a client's ``notifications/cancelled`` stops exactly that request; a
plan the heap handed over goes on the same way. A plain hang, a bare subscription, and a
heap plan that reached its park are kept parked instead: no task, no cancel scope (a task
per hang costs memory, and cancelling 10k of them at EOF takes half a second).
``PlanTasks`` keeps both by request id until they end, and is the stdio
``interpret.Transport``: every byte goes through the one stdout writer (dribbled when a
``dribble`` came before), a park in a task waits to be cancelled, an exit or a closed
stdout is a job for the writer, a ``stopReading`` pauses the reader.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

import trio

from mockmcp.core.actions import (Action, Ask, CloseStdout, Dribble, Emit, Exit, Forward, HttpFault, Plan, Send,
                                  StopReading)
from mockmcp.core.connection import StdioConnection
from mockmcp.shells.admission import Admission, PlanRun
from mockmcp.shells.interpret import perform
from mockmcp.shells.log import StderrLog
from mockmcp.shells.observers import Observers
from mockmcp.shells.waits import Asks, TaskWake
from mockmcp.shells.writer import CloseJob, DribbleJob, ExitJob, StdoutWriter


class Reading(Protocol):
    """The reader, as a plan's ``stopReading`` pauses it."""

    def stop_reading(self, action: StopReading, rid: Any) -> None: ...


class Forwarder(Protocol):
    """A plan's ``forward`` step (the shell's: ``mockmcp proxy`` passes the request to its real server)."""

    async def __call__(self, action: Forward, rid: Any, dribble: Dribble | None, /) -> None: ...


class PlanTasks:
    """Plans in tasks (their cancel scopes) and parked requests, by request id; the stdio steps."""

    def __init__(self, conn: StdioConnection, writer: StdoutWriter, observers: Observers, admission: Admission,
                 asks: Asks, task_wake: TaskWake, log: StderrLog, reading: Reading, forward: Forwarder) -> None:
        self.conn = conn
        self.writer = writer
        self.observers = observers
        self.admission = admission
        self.asks = asks
        self.task_wake = task_wake  # (interpret.Transport: a listen stream's wait for task changes)
        self.log = log
        self.reading = reading
        self.forward = forward
        self.scopes: dict[Any, trio.CancelScope] = {}
        self.parked: dict[Any, Plan] = {}

    def start(self, nursery: trio.Nursery, actions: Iterable[Action | None], run: PlanRun) -> None:
        """Run the plan's remaining ``actions`` in a task; its scope is registered at once (a cancel in
        the same input chunk finds it before the task runs)."""
        scope = self.scopes[run.rid] = trio.CancelScope()
        nursery.start_soon(self._run, actions, run, scope)

    def park(self, plan: Plan) -> None:
        """Hold ``plan`` without a task until it is cancelled or the input ends (its sends were written)."""
        self.parked[plan.request_id] = plan

    def heap_parked(self, plan: Plan, run: PlanRun) -> None:
        """The timer heap's plan reached its park: held as parked, its place in the bound given back."""
        run.parked = True
        self.parked[plan.request_id] = plan
        self.admission.release(run)

    def heap_ended(self, run: PlanRun) -> None:
        """The timer heap's plan ran out of actions, or was dropped after EOF."""
        self.conn.finished(run.rid)
        self.admission.release(run)

    def cancel(self, rid: Any) -> bool:
        """The client cancelled request ``rid``: stop its task or drop its park (``False``: neither is ours)."""
        scope = self.scopes.pop(rid, None)
        if scope is None:
            return self.parked.pop(rid, None) is not None
        scope.cancel()  # the engine already freed the id (it may be reused in the next line)
        return True

    def drop_parked(self) -> None:
        """The input ended: parked requests are finished (what a cancelled task's ``finally`` does)."""
        for rid in list(self.parked):
            del self.parked[rid]
            self.conn.finished(rid)

    async def _run(self, actions: Iterable[Action | None], run: PlanRun, scope: trio.CancelScope) -> None:
        """Perform one plan's remaining ``actions``, in order, in the plan's own cancel scope.

        The reader already queued the plan's leading sends (a subscription's ack) and
        made it hold its place (counted as busy: an EOF in the same chunk waits for it);
        the place is given back when the plan parks or ends. (Or the timer heap ran the
        plan so far and handed it over.)
        """
        with scope:
            try:
                for action in actions:
                    await perform(self, action, run)
            finally:
                if self.scopes.get(run.rid) is scope:
                    del self.scopes[run.rid]
                    self.conn.finished(run.rid)  # (after a client cancel the engine already did)
                self.admission.release(run)

    # ---------------------------------------------------------- the stdio steps (interpret.Transport)

    async def send_step(self, send: Send, run: PlanRun) -> None:
        self.observers.emitted(send)
        if send.final and not run.counted and self.scopes.pop(run.rid, None) is not None:
            # A stream's last message: it stops listening now, not when this task runs again
            # (an event another plan emits meanwhile must not reach it), as on the timer heap.
            self.conn.finished(run.rid)
        await self._queue_bytes(send.data, run)

    async def raw_step(self, data: bytes, run: PlanRun) -> None:
        self.observers.output(None, data)
        await self._queue_bytes(data, run)

    async def emit_step(self, emit: Emit, run: PlanRun) -> None:
        for send in self.conn.engine.fan_out(emit):
            self.observers.emitted(send)
            await self.writer.send(send.data)

    async def park_step(self, run: PlanRun) -> None:
        run.parked = True
        self.admission.release(run)
        await trio.sleep_forever()

    async def exit_step(self, exit: Exit, run: PlanRun) -> None:
        if exit.partial:
            self.observers.output(None, exit.partial)
            await self.writer.send(exit.partial)
        self.observers.event("exit", {"status": exit.status, "id": run.rid})
        await self.writer.send(ExitJob(exit.status))
        await trio.sleep_forever()

    def stop_reading_step(self, stop: StopReading, run: PlanRun) -> None:
        self.reading.stop_reading(stop, run.rid)

    async def close_step(self, close: CloseStdout, run: PlanRun) -> None:
        self.observers.event("closeStdout", {"id": run.rid})
        await self.writer.send(CloseJob())

    async def forward_step(self, forward: Forward, run: PlanRun) -> None:
        await self.forward(forward, run.rid, run.dribble)

    async def http_fault_step(self, fault: HttpFault, run: PlanRun) -> None:
        await trio.lowlevel.checkpoint()  # an HTTP transport fault: nothing to do on stdio

    async def ask_step(self, ask: Ask, run: PlanRun) -> None:
        """Send the client a request, wait for its answer (or the timeout), hand it to the core."""

        async def write(message: Any, data: bytes) -> None:
            self.observers.output(message, data)
            await self._queue_bytes(data, run)

        async def write_cancel(message: Any, data: bytes) -> None:
            self.observers.output(message, data)
            await self.writer.send(data)

        await self.asks.ask(ask, write, write_cancel)

    async def _queue_bytes(self, data: bytes, run: PlanRun) -> None:
        if run.dribble is None:
            await self.writer.send(data)
        else:
            await self.writer.send(DribbleJob(data, run.dribble.chunk, run.dribble.pause))


__all__ = ["Forwarder", "PlanTasks", "Reading"]
