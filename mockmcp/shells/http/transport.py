"""The plan's HTTP steps (``interpret.Transport``): what a plan's actions mean over HTTP.

A plan runs in a task of its own (``run_plan``) and puts what it produces on its
channel (``channel.Run``); the steps here decide what goes there: a message framed
as an SSE event (or kept for the one JSON body), an event fanned out to the listen
streams, a park that no longer holds up a graceful stop, an exit, the connection
dropped for a scripted "stdout closed", a legacy-era request to the client.
"""

from __future__ import annotations

from typing import Any

import trio

from mockmcp.core.actions import Ask, CloseStdout, Emit, Exit, Forward, HttpFault, Plan, Send, StopReading
from mockmcp.wire import jsonrpc
from mockmcp.shells.http.channel import Detach, End, ExitNow, Out, Reset, Run
from mockmcp.shells.http.ids import RequestIds
from mockmcp.shells.http.lifecycle import Lifecycle
from mockmcp.shells.http.seams import Routes
from mockmcp.shells.http.taps import Taps
from mockmcp.shells.interpret import no_real_server, perform
from mockmcp.shells.log import StderrLog
from mockmcp.shells.waits import Asks, TaskWake


class HttpTransport:
    def __init__(self, log: StderrLog, task_wake: TaskWake, asks: Asks, routes: Routes, ids: RequestIds,
                 lifecycle: Lifecycle, taps: Taps) -> None:
        self.log = log
        self.task_wake = task_wake  # wakes the listen streams that watch tasks (waits.py)
        self.asks = asks  # legacy-era requests to the client, until their answer is POSTed (waits.py)
        self.routes = routes
        self.ids = ids
        self.lifecycle = lifecycle
        self.taps = taps

    async def run_plan(self, plan: Plan, run: Run, scope: trio.CancelScope, registered: bool, listen: bool) -> None:
        """The plan's actions, in ``scope``; its channel closed when it ends (the writer then ends the answer)."""
        rid, sink = plan.request_id, run.sink
        with scope:
            try:
                for action in plan.all_actions():
                    await perform(self, action, run)
            except trio.BrokenResourceError:
                pass  # the answer is over (endStream, a reset, the client gone): the rest goes nowhere
            finally:
                sink.close()
                if listen:
                    self.routes.close(rid, sink)
                if registered:
                    self.ids.end(rid, scope)

    async def send_step(self, send: Send, run: Run) -> None:
        await run.put(send.data, send)

    async def raw_step(self, data: bytes, run: Run) -> None:
        await run.put(data, None, data)

    async def emit_step(self, emit: Emit, run: Run) -> None:
        await self.routes.fan_out(emit, run.sink)

    async def park_step(self, run: Run) -> None:
        self.lifecycle.not_busy(run)  # a hang holds up no graceful stop
        await trio.sleep_forever()

    async def exit_step(self, exit: Exit, run: Run) -> None:
        self.taps.event("exit", {"status": exit.status, "id": run.rid})
        await run.sink.send(ExitNow(exit.status, exit.partial))
        await trio.sleep_forever()

    def stop_reading_step(self, stop: StopReading, run: Run) -> None:
        self.log("info", "stopReading has no effect over HTTP (each request is its own POST)")

    async def close_step(self, close: CloseStdout, run: Run) -> None:
        # Over HTTP the scripted "stdout closed" is the connection dropped mid-answer.
        await run.sink.send(Reset(("closeStdout", {"id": run.rid})))

    async def forward_step(self, forward: Forward, run: Run) -> None:
        msg = no_real_server(run.rid)  # (mockmcp proxy is stdio: there is no real server behind an HTTP mock)
        data = jsonrpc.encode(msg)
        await run.put(data, Send(msg, data, True))

    async def ask_step(self, ask: Ask, run: Run) -> None:
        # A legacy-era request to the client goes on this request's stream (2025-11-25 sends it
        # there); the client POSTs its response, which the exchange routes to the wait by id.
        async def write(message: Any, data: bytes) -> None:
            await run.put(data, Send(message, data))

        await self.asks.ask(ask, write)

    async def http_fault_step(self, fault: HttpFault, run: Run) -> None:
        # (its head options were applied before the head was written: see httprules.head_faults)
        if fault.write is not None:
            await run.sink.send(Out(fault.write, None, fault.write))  # unframed: malformed SSE on purpose
        if fault.end_stream:
            await run.sink.send(End(("httpEndStream", {"id": run.rid})))
        if fault.reset:
            await run.sink.send(Reset(("httpReset", {"id": run.rid})))
        if fault.retry is not None:
            await run.sink.send(Detach(max(0, round(fault.retry * 1000))))
