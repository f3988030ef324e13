"""The trio shell: stdin and stdout, time and concurrency around the core.

One reader feeds stdin into the ``Connection``; plans that only send are
written at once, hangs are parked without a task, plans of sends, emits and
sleeps run from one timer heap (``streams.TimedPlans``), everything else runs in
a task of its own with its own cancel scope (so a client's
``notifications/cancelled`` stops exactly that request); one writer task owns
stdout, so lines never interleave. At EOF, requests with scripted work still
pending get a bounded grace period, hangs and subscriptions are dropped at
once, and the process exits.

The reader never waits for a timed plan: whatever the number of requests in
flight, it reads on, so cancellations, the client's responses, requests answered
at once and the end of the input are handled as they come. What bounds memory
is an admission bound instead of a wait: timed plans in flight (on the heap or
in a task; parked ones do not count) hold at most ``max_tasks`` places and
``max_bytes`` of estimated memory (``_cost``: what the plan holds, a task if it
needs one), and a request whose plan would pass either is answered at once with
-32603 "too many requests in flight" (it does nothing of its script). The
reader does wait on the writer: a client that does not read what it is sent
stops being read (its output would otherwise pile up), as before.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from typing import Any, Callable, Iterable, Iterator

import trio

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p
from mockmcp.core.actions import (Action, Answer, Ask, Cancel, CloseStdout, Dribble, Emit, Exit, Forward, HttpFault, Output, Park, Plan,
                      Send, StopReading, WriteRaw)
from mockmcp.core.connection import StdioConnection
from mockmcp.shells.interpret import no_real_server, perform
from mockmcp.shells.log import StderrLog
from mockmcp.shells.streams import TimedPlans, eligible
from mockmcp.shells.waits import Asks, TaskWake
from mockmcp.shells.writer import CloseJob, DribbleJob, ExitJob, StdoutWriter

MAX_TASKS = 65_536  # timed plans in flight at once (on the timer heap or in a task; parked ones do not count)
MAX_BYTES = 48 * 1024 * 1024  # and their estimated memory (_cost) at most; past either, a request is refused
# The estimate of what a timed plan holds while it runs (_cost), set a little above what tracemalloc
# counts for plans of the bundled and benchmark scenarios (a sleep and an answer: 0.6 KB and the
# shell's entry; cancel's long_running: 10 KB, 67 KB with a progress token):
PLAN_BYTES = 1536  # the plan, its request context, the session's and the shell's entries
ACTION_BYTES = 96  # each eager action
SEND_BYTES = 256  # and a send or raw write more, plus its bytes twice (a message is often kept decoded too)
REST_BYTES = 4096  # a lazy rest (a loop's generators and the context it renders in)
TASK_BYTES = 4096  # a trio task and its cancel scope


class _PlanRun:
    """The state of one timed plan: its id, its place in the bound, park and dribble settings."""

    __slots__ = ("rid", "counted", "held", "cost", "parked", "dribble")

    def __init__(self, rid: Any, *, counted: bool) -> None:
        self.rid = rid
        self.counted = counted  # holds a place (and up exit at EOF) while it has scripted work
        self.held = False  # it holds its place now (given back when it parks or ends)
        self.cost = 0  # its estimated memory while it holds its place
        self.parked = False
        self.dribble: Dribble | None = None


class Shell:
    """Serves one connection: a reader, a task per timed plan, and the writer (``writer``)."""

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
        on_output: Callable[[Any, bytes], None] | None = None,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
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
        self.on_output = on_output
        self.on_event = on_event
        self.read_size = read_size
        self.reading_resumes = 0.0  # trio time before which the reader does not read (inf: never)
        self.scopes: dict[Any, trio.CancelScope] = {}
        self.parked: dict[Any, Plan] = {}  # requests parked without a task (see _dispatch)
        self.asks = Asks(self.log)  # the server's requests to the client, by id, until answered (waits.py)
        self.busy = 0  # plans with scripted work left (not parked), and the proxy's forwards owed
        # Timed plans in flight and their estimated memory: at most max_tasks and max_bytes
        # (see the module's docstring); past them a request is refused, the reader never waits.
        self.in_flight = 0
        self.load = 0
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self._refusing = False  # refusals since the last admitted plan were logged
        self._nursery: trio.Nursery | None = None  # where plan tasks run (serve's)
        self.idle = trio.Event()
        self.task_wake = TaskWake()  # wakes the listen streams that watch tasks when a request changed tasks
        self.on_data: Callable[[bytes], None] | None = None  # every line written, undecoded (the control journal)
        # The control channel (controlshell) pauses and stops the reader, also in the middle of a
        # read: the reads run in one cancel scope (``_reads``), renewed only after such an
        # interruption, and ``_reading`` says whether the reader is waiting in a read right now
        # (the only moment the scope may be cancelled: never while it dispatches).
        self._read_scope: trio.CancelScope | None = None
        self._reading = False
        self._held: bytes | None = None  # a chunk read in the instant the reader was interrupted
        self._reading_changed = trio.Event()
        self._stopped = False
        self.writer = StdoutWriter(stdout, self.log, self.exit_process, exit_after=exit_after, close_stdout=close_stdout)
        # Plans of sends, emits and sleeps run from one timer heap (streams.py); False: a
        # task each, the reference path the differential tests compare against.
        self.streams: TimedPlans | None = None
        if timed_streams:
            self.streams = TimedPlans(
                self.writer.send, connection.engine.fan_out, self._emitted, self._heap_parked, self._heap_ended,
                self._handoff,
            )

    def _emitted(self, send: Send) -> None:
        if self.on_output is not None:
            self.on_output(send.message, send.data)
        if self.on_data is not None:
            self.on_data(send.data)

    # ---------------------------------------------------------- control (controlshell)

    def pause_reading(self, seconds: float | None) -> None:
        """Stop reading stdin now (a read in progress is cancelled; no byte is lost)."""
        self.reading_resumes = math.inf if seconds is None else trio.current_time() + seconds
        self._interrupt_read()
        self.log("info", "stopped reading stdin (control)" + ("" if seconds is None else f" for {seconds:g} s"))
        self._event("stopReading", {"id": None, "seconds": seconds})

    def resume_reading(self) -> None:
        self.reading_resumes = 0.0
        self._reading_changed.set()
        self._reading_changed = trio.Event()

    def stop(self) -> None:
        """End as at the end of stdin (pending work gets its grace), whatever ``ignore_eof`` says."""
        self._stopped = True
        self._interrupt_read()
        self.resume_reading()

    def _interrupt_read(self) -> None:
        """Cancel the read the reader waits in, if it does (otherwise it sees the flags before its next)."""
        if self._reading and self._read_scope is not None:
            self._read_scope.cancel()

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
            self._emitted(send)
        if sends:
            await self.writer.send(b"".join(send.data for send in sends))

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
            self._read_scope = scope
            while True:
                if data is None:
                    if self.reading_resumes or self._stopped:
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
                await self._dispatch(self.conn.receive_data(data), nursery)
                self.task_wake.after_input(self.conn.engine)
                data = None
        return False  # (the read was cancelled: nothing was taken)

    async def _while_paused(self) -> None:
        """Wait until a pause (scripted back-pressure, or the control channel's) ends or is resumed."""
        while self.reading_resumes > trio.current_time():
            with trio.move_on_at(self.reading_resumes):
                await self._reading_changed.wait()
        self.reading_resumes = 0.0  # (a timed pause that ended: the reader's check stays one test)

    # ---------------------------------------------------------- plans

    async def _run_plan(self, actions: Iterable[Action | None], run: _PlanRun, scope: trio.CancelScope) -> None:
        """Perform one plan's remaining ``actions``, in order, in the plan's own cancel scope.

        The reader (``_dispatch``) already queued the plan's leading sends (a
        subscription's ack), registered ``scope`` (a cancel in the same input
        chunk finds it before this task runs) and made it hold its place (counted
        as busy: an EOF in the same chunk waits for it); the place is given back
        when the plan parks or ends. (Or the timer heap ran the plan so far and
        handed it over: ``_handoff``.)
        """
        with scope:
            try:
                for action in actions:
                    await perform(self, action, run)
            finally:
                if self.scopes.get(run.rid) is scope:
                    del self.scopes[run.rid]
                    self.conn.finished(run.rid)  # (after a client cancel the engine already did)
                self._release(run)

    # ---------------------------------------------------------- the stdio steps (interpret.Transport)

    async def send_step(self, send: Send, run: _PlanRun) -> None:
        self._emitted(send)
        if send.final and not run.counted and self.scopes.pop(run.rid, None) is not None:
            # A stream's last message: it stops listening now, not when this task runs again
            # (an event another plan emits meanwhile must not reach it), as on the timer heap.
            self.conn.finished(run.rid)
        await self._queue_bytes(send.data, run)

    async def raw_step(self, data: bytes, run: _PlanRun) -> None:
        if self.on_output is not None:
            self.on_output(None, data)
        await self._queue_bytes(data, run)

    async def emit_step(self, emit: Emit, run: _PlanRun) -> None:
        for send in self.conn.engine.fan_out(emit):
            self._emitted(send)
            await self.writer.send(send.data)

    async def park_step(self, run: _PlanRun) -> None:
        run.parked = True
        self._release(run)
        await trio.sleep_forever()

    async def exit_step(self, exit: Exit, run: _PlanRun) -> None:
        if exit.partial:
            if self.on_output is not None:
                self.on_output(None, exit.partial)
            await self.writer.send(exit.partial)
        self._event("exit", {"status": exit.status, "id": run.rid})
        await self.writer.send(ExitJob(exit.status))
        await trio.sleep_forever()

    def stop_reading_step(self, stop: StopReading, run: _PlanRun) -> None:
        self._stop_reading(stop, run.rid)

    async def close_step(self, close: CloseStdout, run: _PlanRun) -> None:
        self._event("closeStdout", {"id": run.rid})
        await self.writer.send(CloseJob())

    async def forward_step(self, forward: Forward, run: _PlanRun) -> None:
        await self.forward(forward, run.rid, run.dribble)

    async def http_fault_step(self, fault: HttpFault, run: _PlanRun) -> None:
        await trio.lowlevel.checkpoint()  # an HTTP transport fault: nothing to do on stdio

    async def forward(self, action: Forward, rid: Any, dribble: Dribble | None) -> None:
        """A ``forward`` step outside ``mockmcp proxy`` (which overrides this): there is no real server."""
        msg = no_real_server(rid)
        send = Send(msg, jsonrpc.encode(msg), True)
        self._emitted(send)
        await self.writer.send(send.data)

    async def ask_step(self, ask: Ask, run: _PlanRun) -> None:
        """Send the client a request, wait for its answer (or the timeout), hand it to the core."""

        async def write(message: Any, data: bytes) -> None:
            if self.on_output is not None:
                self.on_output(message, data)
            await self._queue_bytes(data, run)

        async def write_cancel(message: Any, data: bytes) -> None:
            if self.on_output is not None:
                self.on_output(message, data)
            await self.writer.send(data)

        await self.asks.ask(ask, write, write_cancel)

    def _stop_reading(self, action: StopReading, rid: Any) -> None:
        seconds = action.seconds
        self.reading_resumes = math.inf if seconds is None else trio.current_time() + seconds
        self.log("info", "stopped reading stdin (scripted)" + ("" if seconds is None else f" for {seconds:g} s"))
        self._event("stopReading", {"id": rid, "seconds": seconds})

    async def _queue_bytes(self, data: bytes, run: _PlanRun) -> None:
        if run.dribble is None:
            await self.writer.send(data)
        else:
            await self.writer.send(DribbleJob(data, run.dribble.chunk, run.dribble.pause))

    def _event(self, name: str, fields: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(name, fields)

    def _not_busy(self) -> None:
        self.busy -= 1
        if self.busy == 0:
            self.idle.set()
            self.idle = trio.Event()

    # ---------------------------------------------------------- the bound on timed plans in flight

    def _hold(self, run: _PlanRun, cost: int) -> None:
        run.held = True
        run.cost = cost
        self.in_flight += 1
        self.load += cost
        self.busy += 1
        self._refusing = False

    def _release(self, run: _PlanRun) -> None:
        """The plan parked, ended or was cancelled: its place is free (once)."""
        if run.held:
            run.held = False
            self.in_flight -= 1
            self.load -= run.cost
            self._not_busy()

    def _refuse(self, plan: Plan, immediate: list[bytes]) -> None:
        """Answer a request whose plan would pass the bound at once, with an error; nothing of its script runs."""
        rid = plan.request_id
        self.conn.finished(rid)
        why = (f"too many requests in flight ({self.in_flight:,} scripted replies running, about "
               f"{self.load / 2**20:.0f} MiB)")
        if not self._refusing:
            self._refusing = True
            self.log("warning", f"{why}: refusing new ones until some end")
        if not plan.has_id:
            return  # a notification's rule: nothing to answer
        msg = errors.error_response(rid, p.INTERNAL_ERROR, f"mockmcp: {why}; try again when some are answered")
        send = Send(msg, jsonrpc.encode(msg), True)
        self._emitted(send)
        immediate.append(send.data)

    # ---------------------------------------------------------- the timer heap's plans (streams.TimedPlans)

    def _heap_parked(self, plan: Plan, run: _PlanRun) -> None:
        run.parked = True
        self.parked[plan.request_id] = plan
        self._release(run)

    def _heap_ended(self, run: _PlanRun) -> None:
        self.conn.finished(run.rid)
        self._release(run)

    def _handoff(self, plan: Plan, remaining: Iterator[Action | None], run: _PlanRun) -> None:
        """The heap met an action it does not perform: a task goes on from it, in a cancel scope of its own."""
        if run.held:
            run.cost += TASK_BYTES
            self.load += TASK_BYTES
        scope = self.scopes[run.rid] = trio.CancelScope()
        assert self._nursery is not None  # (the heap runs inside serve)
        self._nursery.start_soon(self._run_plan, remaining, run, scope)

    def _cancel(self, cancel: Cancel) -> None:
        scope = self.scopes.pop(cancel.request_id, None)
        ours = scope is not None or self.parked.pop(cancel.request_id, None) is not None
        if not ours and self.streams is not None:
            run = self.streams.cancel(cancel.request_id)
            if run is not None:
                ours = True
                self._release(run)
        if ours:
            if scope is not None:
                scope.cancel()  # the engine already freed the id (it may be reused in the next line)
            why = f" ({cancel.reason})" if cancel.reason else ""
            self.log("info", f"request {cancel.request_id!r} cancelled by the client{why}")
            if self.on_event is not None:
                self.on_event("cancelled", {"id": cancel.request_id, "reason": cancel.reason})

    async def _dispatch(self, outputs: list[Output], nursery: trio.Nursery) -> None:
        immediate: list[bytes] = []
        observed = self.on_output is not None or self.on_data is not None
        for out in outputs:
            # The common case first, tested without a class pattern (this loop runs per message).
            if isinstance(out, Plan) and out.immediate:
                for action in out.actions:
                    if isinstance(action, Send):  # always: an immediate plan only sends
                        if observed:
                            self._emitted(action)
                        immediate.append(action.data)
                continue
            match out:
                case Cancel():
                    self._cancel(out)
                case Answer():
                    self.asks.answer(out)
                case Plan() if _parks_at_once(out):
                    # A plain hang or a bare subscription: no task, no cancel scope (a
                    # task per hang costs memory, and cancelling 10k of them at EOF takes
                    # half a second). Its leading sends keep their place in the output.
                    for action in out.actions[:-1]:
                        if isinstance(action, Send):  # always: _parks_at_once checked
                            self._emitted(action)
                            immediate.append(action.data)
                    self.parked[out.request_id] = out
                case Plan():
                    first = _leading(out.actions)
                    on_heap = self.streams is not None and eligible(out, first)
                    run = _PlanRun(out.request_id, counted=_counted(out))
                    if run.counted:
                        cost = _cost(out, task=not on_heap)
                        if self.in_flight and (self.in_flight >= self.max_tasks or self.load + cost > self.max_bytes):
                            self._refuse(out, immediate)
                            continue
                        self._hold(run, cost)
                    # Leading sends and raw bytes keep their place in the output (in input
                    # order, whatever order the plans then run in: a later request's scripted
                    # exit cannot overtake them), and a leading stopReading holds the very next
                    # read: the reader performs all three before it moves on.
                    for action in out.actions[:first]:
                        if isinstance(action, Send):
                            self._emitted(action)
                            immediate.append(action.data)
                        elif isinstance(action, WriteRaw):
                            if self.on_output is not None:
                                self.on_output(None, action.data)
                            immediate.append(action.data)
                        elif isinstance(action, StopReading):
                            self._stop_reading(action, out.request_id)
                    if on_heap:
                        assert self.streams is not None
                        self.streams.add(out, first, run)  # its sends go out with the heap's next batch
                        continue
                    if immediate:
                        await self.writer.send(b"".join(immediate))
                        immediate = []
                    scope = self.scopes[out.request_id] = trio.CancelScope()
                    nursery.start_soon(self._run_plan, itertools.islice(out.all_actions(), first, None), run, scope)
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
                    while not self._stopped:
                        if self.reading_resumes:
                            await self._while_paused()
                        elif await self._reads(requests):
                            break  # the end of stdin
                    await self._dispatch(self.conn.receive_eof(), requests)
                    if self.ignore_eof and not self._stopped:
                        self.log("info", "stdin closed; ignoring EOF as scripted (waiting for a signal)")
                        await trio.sleep_forever()
                    self.log("debug", "stdin closed")
                    if self.busy:
                        deadline = trio.current_time() + self.grace
                        if self.streams is not None:
                            self.streams.cut_after(deadline)  # what sleeps past it cannot finish: dropped now
                        with trio.move_on_at(deadline):
                            while self.busy:
                                await self.idle.wait()
                finally:
                    requests.cancel_scope.cancel()
                    for rid in list(self.parked):  # what a cancelled task's `finally` does
                        del self.parked[rid]
                        self.conn.finished(rid)
                    if self.streams is not None:
                        for run in self.streams.drain():
                            self.conn.finished(run.rid)
            await self.writer.aclose()
        return 0


def _counted(plan: Plan) -> bool:
    """Does this plan count as scripted work (a place in the bound on plans in flight, and EOF grace)?

    Subscription streams do not: they live until the client or the input's end
    closes them (like hangs), and what they send is bounded by the scenario, so
    they neither hold up exit at EOF nor take a place in the bound.
    """
    return plan.method != "subscriptions/listen"


def _leading(actions: list[Action]) -> int:
    """How many of the plan's first actions the reader performs itself (sends, raw bytes, stopReading)."""
    first = 0
    for action in actions:
        kind = type(action)
        if kind is not Send and kind is not WriteRaw and kind is not StopReading:
            break
        first += 1
    return first


def _cost(plan: Plan, *, task: bool) -> int:
    """The estimated memory a timed plan holds while it runs (bytes; see ``PLAN_BYTES`` and the rest)."""
    actions = plan.actions
    cost = PLAN_BYTES + ACTION_BYTES * len(actions)
    for action in actions:
        if isinstance(action, (Send, WriteRaw)):
            cost += SEND_BYTES + 2 * len(action.data)
    if plan.rest is not None:
        cost += REST_BYTES
    if task:
        cost += TASK_BYTES
    return cost


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
