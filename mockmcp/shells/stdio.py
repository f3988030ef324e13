"""The trio shell: stdin and stdout, time and concurrency around the core.

One reader (``reader.StdinReader``) feeds stdin into the ``Connection``; the shell
dispatches what each chunk produced: plans that only send are written at once,
hangs are parked without a task, plans of sends, emits and sleeps run from one
timer heap (``streams.TimedPlans``), everything else runs in a task of its own
with its own cancel scope (``plantasks.PlanTasks``, so a client's
``notifications/cancelled`` stops exactly that request); one writer task owns
stdout, so lines never interleave. At EOF, requests with scripted work still
pending get a bounded grace period, hangs and subscriptions are dropped at
once, and the process exits.

The reader never waits for a timed plan: whatever the number of requests in
flight, it reads on, so cancellations, the client's responses, requests answered
at once and the end of the input are handled as they come. What bounds memory
is an admission bound instead of a wait (``admission.Admission``): a request
whose plan would pass it is answered at once with -32603 "too many requests in
flight" (it does nothing of its script). The reader does wait on the writer: a
client that does not read what it is sent stops being read (its output would
otherwise pile up), as before.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any, Callable, Iterator

import trio

from mockmcp.wire import jsonrpc
from mockmcp.core.actions import (Action, Answer, Cancel, Dribble, Forward, Output, Park, Plan, Send, StopReading,
                                  WriteRaw)
from mockmcp.core.connection import StdioConnection
from mockmcp.shells.admission import MAX_BYTES, MAX_TASKS, Admission, Busy, PlanRun, cost, counted
from mockmcp.shells.interpret import no_real_server
from mockmcp.shells.log import StderrLog
from mockmcp.shells.observers import OnData, OnEvent, Observers, OnOutput
from mockmcp.shells.plantasks import PlanTasks
from mockmcp.shells.reader import StdinReader
from mockmcp.shells.streams import TimedPlans, eligible
from mockmcp.shells.waits import Asks, TaskWake
from mockmcp.shells.writer import ExitJob, StdoutWriter


class Shell:
    """Serves one connection: the reader, dispatch, the plans' tasks and timer heap, and the writer."""

    def __init__(
        self,
        connection: StdioConnection,
        stdin: trio.abc.ReceiveStream,
        stdout: trio.abc.SendStream,
        *,
        grace: float = 1.0,
        ignore_eof: bool = False,
        log: StderrLog | None = None,
        exit_process: Callable[[int], Any] | None = None,
        on_output: OnOutput | None = None,
        on_event: OnEvent | None = None,
        on_data: OnData | None = None,
        read_size: int = 65536,
        exit_after: tuple[int, int] | None = None,
        close_stdout: Callable[[], Any] | None = None,
        max_tasks: int = MAX_TASKS,
        max_bytes: int = MAX_BYTES,
        timed_streams: bool = True,
    ) -> None:
        self.conn = connection
        self.stdin = stdin
        self.grace = grace
        self.ignore_eof = ignore_eof
        self.log = log or StderrLog("warning")
        self.exit_process = exit_process or hard_exit
        self.observers = Observers(on_output, on_event, on_data)
        self.asks = Asks(self.log)  # the server's requests to the client, by id, until answered (waits.py)
        self.task_wake = TaskWake()  # wakes the listen streams that watch tasks when a request changed tasks
        # Plans with scripted work left (not parked), and the proxy's forwards owed: the EOF grace waits for them.
        self.work = Busy()
        self.admission = Admission(self.work, self.log, max_tasks=max_tasks, max_bytes=max_bytes)
        self._nursery: trio.Nursery | None = None  # where plan tasks run (serve's)
        self.writer = StdoutWriter(stdout, self.log, self.exit_process, exit_after=exit_after, close_stdout=close_stdout)
        self.reader = StdinReader(stdin, connection, self._dispatch, self.task_wake, self.log, self.observers,
                                  read_size=read_size)
        self.tasks = PlanTasks(connection, self.writer, self.observers, self.admission, self.asks, self.task_wake,
                               self.log, self.reader, self.forward)
        # Plans of sends, emits and sleeps run from one timer heap (streams.py); False: a
        # task each, the reference path the differential tests compare against.
        self.streams: TimedPlans | None = None
        if timed_streams:
            self.streams = TimedPlans(
                self.writer.send, connection.engine.fan_out, self.observers.emitted, self.tasks.heap_parked,
                self.tasks.heap_ended, self._handoff,
            )

    # ---------------------------------------------------------- what the shell's users and tests read

    @property
    def on_output(self) -> OnOutput | None:
        return self.observers.on_output

    @property
    def busy(self) -> int:
        """Work the EOF grace waits for; ``mockmcp proxy`` adds the answers its real server owes."""
        return self.work.count

    @busy.setter
    def busy(self, count: int) -> None:
        self.work.count = count

    def _not_busy(self) -> None:
        self.work.done()

    @property
    def in_flight(self) -> int:
        return self.admission.in_flight

    @property
    def load(self) -> int:
        return self.admission.load

    @property
    def scopes(self) -> dict[Any, trio.CancelScope]:
        """Requests whose plans run in tasks, by id (their cancel scopes)."""
        return self.tasks.scopes

    @property
    def parked(self) -> dict[Any, Plan]:
        """Requests parked without a task, by id."""
        return self.tasks.parked

    # ---------------------------------------------------------- control (shells.control)

    def pause_reading(self, seconds: float | None) -> None:
        """Stop reading stdin now (a read in progress is cancelled; no byte is lost)."""
        self.reader.pause(seconds)

    def resume_reading(self) -> None:
        self.reader.resume()

    def stop(self) -> None:
        """End as at the end of stdin (pending work gets its grace), whatever ``ignore_eof`` says."""
        self.reader.stop()

    async def crash(self, status: int) -> None:
        """Exit at once with ``status`` (the control channel's crash), after what the writer holds."""
        await self.writer.send(ExitJob(status))

    def wake_task_streams(self) -> None:
        """If tasks changed (a request, another process of the session, a new named state), wake the
        streams watching them (the session's log watcher calls it too)."""
        self.task_wake.after_input(self.conn.engine)

    async def deliver(self, sends: list[Send]) -> None:
        """Write lines made outside a plan (the control channel's events) through the writer."""
        for send in sends:
            self.observers.emitted(send)
        if sends:
            await self.writer.send(b"".join(send.data for send in sends))

    async def forward(self, action: Forward, rid: Any, dribble: Dribble | None) -> None:
        """A ``forward`` step outside ``mockmcp proxy`` (which overrides this): there is no real server."""
        msg = no_real_server(rid)
        send = Send(msg, jsonrpc.encode(msg), True)
        self.observers.emitted(send)
        await self.writer.send(send.data)

    def _event(self, name: str, fields: dict[str, Any]) -> None:
        self.observers.event(name, fields)

    # ---------------------------------------------------------- dispatch

    def _handoff(self, plan: Plan, remaining: Iterator[Action | None], run: PlanRun) -> None:
        """The heap met an action it does not perform: a task goes on from it, in a cancel scope of its own."""
        self.admission.add_task(run)
        assert self._nursery is not None  # (the heap runs inside serve)
        self.tasks.start(self._nursery, remaining, run)

    def _cancel(self, cancel: Cancel) -> None:
        rid = cancel.request_id
        ours = self.tasks.cancel(rid)
        if not ours and self.streams is not None:
            run = self.streams.cancel(rid)
            if run is not None:
                ours = True
                self.admission.release(run)
        if ours:
            why = f" ({cancel.reason})" if cancel.reason else ""
            self.log("info", f"request {rid!r} cancelled by the client{why}")
            self.observers.event("cancelled", {"id": rid, "reason": cancel.reason})

    async def _dispatch(self, outputs: list[Output], nursery: trio.Nursery) -> None:
        immediate: list[bytes] = []
        observers = self.observers
        observed = observers.on_output is not None or observers.on_data is not None
        for out in outputs:
            # The common case first, tested without a class pattern (this loop runs per message).
            if isinstance(out, Plan) and out.immediate:
                for action in out.actions:
                    if isinstance(action, Send):  # always: an immediate plan only sends
                        if observed:
                            observers.emitted(action)
                        immediate.append(action.data)
                continue
            match out:
                case Cancel():
                    self._cancel(out)
                case Answer():
                    self.asks.answer(out)
                case Plan() if _parks_at_once(out):
                    # A plain hang or a bare subscription: parked, no task (plantasks says why).
                    # Its leading sends keep their place in the output.
                    for action in out.actions[:-1]:
                        if isinstance(action, Send):  # always: _parks_at_once checked
                            observers.emitted(action)
                            immediate.append(action.data)
                    self.tasks.park(out)
                case Plan():
                    first = _leading(out.actions)
                    on_heap = self.streams is not None and eligible(out, first)
                    run = PlanRun(out.request_id, counted=counted(out))
                    if run.counted and not self.admission.admit(run, cost(out, task=not on_heap)):
                        self.conn.finished(out.request_id)
                        refusal = self.admission.refusal(out)
                        if refusal is not None:
                            observers.emitted(refusal)
                            immediate.append(refusal.data)
                        continue
                    # Leading sends and raw bytes keep their place in the output (in input
                    # order, whatever order the plans then run in: a later request's scripted
                    # exit cannot overtake them), and a leading stopReading holds the very next
                    # read: the reader performs all three before it moves on.
                    for action in out.actions[:first]:
                        if isinstance(action, Send):
                            observers.emitted(action)
                            immediate.append(action.data)
                        elif isinstance(action, WriteRaw):
                            observers.output(None, action.data)
                            immediate.append(action.data)
                        elif isinstance(action, StopReading):
                            self.reader.stop_reading(action, out.request_id)
                    if on_heap:
                        assert self.streams is not None
                        self.streams.add(out, first, run)  # its sends go out with the heap's next batch
                        continue
                    if immediate:
                        await self.writer.send(b"".join(immediate))
                        immediate = []
                    self.tasks.start(nursery, itertools.islice(out.all_actions(), first, None), run)
        if immediate:
            await self.writer.flush(b"".join(immediate))

    # ---------------------------------------------------------- main loop

    async def serve(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> int:
        async with trio.open_nursery() as outer:
            outer.start_soon(self.writer.run)
            async with trio.open_nursery() as requests:
                self._nursery = requests
                if self.streams is not None:
                    requests.start_soon(self.streams.run)
                watch = self.conn.watch  # a session's connection (sessiondir) watches the log
                if watch is not None:
                    requests.start_soon(watch, self.wake_task_streams)
                task_status.started()
                try:
                    await self.reader.read_all(requests)
                    await self._dispatch(self.conn.receive_eof(), requests)
                    if self.ignore_eof and not self.reader.stopped:
                        self.log("info", "stdin closed; ignoring EOF as scripted (waiting for a signal)")
                        await trio.sleep_forever()
                    self.log("debug", "stdin closed")
                    if self.work.count:
                        deadline = trio.current_time() + self.grace
                        if self.streams is not None:
                            self.streams.cut_after(deadline)  # what sleeps past it cannot finish: dropped now
                        with trio.move_on_at(deadline):
                            await self.work.wait_idle()
                finally:
                    requests.cancel_scope.cancel()
                    # A stop the server chose (control's shutdown) ends the listen streams with their results,
                    # after all their plans wrote. (At stdin's EOF the client closed the transport: none owed.)
                    ends = self.conn.engine.subscription_ends() if self.reader.stopped else []
                    self.tasks.drop_parked()
                    if self.streams is not None:
                        for run in self.streams.drain():
                            self.conn.finished(run.rid)
            await self.deliver(ends)
            await self.writer.aclose()
        return 0


def _leading(actions: list[Action]) -> int:
    """How many of the plan's first actions the reader performs itself (sends, raw bytes, stopReading)."""
    first = 0
    for action in actions:
        kind = type(action)
        if kind is not Send and kind is not WriteRaw and kind is not StopReading:
            break
        first += 1
    return first


def _parks_at_once(plan: Plan) -> bool:
    """Sends then a park, nothing timed: the plan needs no task of its own."""
    actions = plan.actions
    if plan.rest is not None or not actions or type(actions[-1]) is not Park:
        return False
    for action in actions[:-1]:
        if type(action) is not Send:
            return False
    return True


def hard_exit(status: int) -> None:
    """End the process now with ``status`` (a scripted ``exit``, a crash on purpose): stderr flushed
    first so its last lines are not lost, then ``os._exit``, so no cleanup or buffered stdout runs."""
    try:
        sys.stderr.flush()
    finally:
        os._exit(status)


__all__ = ["MAX_BYTES", "MAX_TASKS", "Shell", "StderrLog", "hard_exit"]  # StderrLog lives in .log; the shell's users build logs from here
