"""One POST, from its body to its answer.

The body goes to the connection (the engine, with the transport's checks); what
comes back is answered here: a notification or a client's response with ``202``,
a plan that only sends one message with one JSON body at once, a scripted
``http: {status: ...}`` with that status, and any other plan by running it in a
task of its own while this task writes what it produces (``seams.AnswerWriter``)
and a watcher reads the socket: the client closing it cancels the plan (unless
the mock closed the stream for a resume first). A ``GET`` resumes such a stream
(``resume``).
"""

from __future__ import annotations

from typing import Any

import h11
import trio

from mockmcp.core import httprules
from mockmcp.core.actions import Answer, Cancel, Plan, Send
from mockmcp.core.connection import ShellConnection
from mockmcp.wire import errors, jsonrpc
from mockmcp.shells.http.channel import Hold, Run, open_channel
from mockmcp.shells.http.checks import RequestChecks
from mockmcp.shells.http.ids import RequestIds
from mockmcp.shells.http.lifecycle import ExitCounter, Lifecycle
from mockmcp.shells.http.responses import (READ_SIZE, ClientGone, Dropped, reset_on_close, write_accepted, write_json,
                                           write_reject, write_status)
from mockmcp.shells.http.resume import Resumes
from mockmcp.shells.http.seams import AnswerWriter, PlanRunner, Routes
from mockmcp.shells.http.taps import Taps
from mockmcp.shells.log import StderrLog
from mockmcp.shells.waits import Asks, TaskWake


class Exchange:
    def __init__(self, conn: ShellConnection, checks: RequestChecks, runner: PlanRunner, writer: AnswerWriter,
                 routes: Routes, ids: RequestIds, lifecycle: Lifecycle, counter: ExitCounter, taps: Taps,
                 asks: Asks, task_wake: TaskWake, log: StderrLog, resumes: Resumes) -> None:
        self.conn = conn
        self.checks = checks
        self.runner = runner
        self.writer = writer
        self.routes = routes
        self.ids = ids
        self.lifecycle = lifecycle
        self.counter = counter
        self.taps = taps
        self.asks = asks
        self.task_wake = task_wake
        self.log = log
        self.resumes = resumes  # the streams closed for the client to resume with GET (resume.py)

    async def answer(self, h: h11.Connection, stream: trio.abc.Stream, request: h11.Request,
                     headers: dict[bytes, bytes], body: bytes) -> None:
        if request.method == b"GET":  # (let through only while a closed stream waits: checks.head)
            await self._resume(h, stream, headers)
            return
        seen: list[jsonrpc.Message] = []
        self.checks.request(headers, body)
        if not body.strip():
            error = errors.ParseError("Parse error: the POST body is empty").response()
            await write_json(h, stream, 400, jsonrpc.encode(error))
            return
        conn = self.conn
        out = conn.handle_line(body, self.checks.message_check(headers, seen))
        self.task_wake.after_input(conn.engine)
        if not isinstance(out, Plan):  # a notification or a legacy client's answer, accepted (a cancel performed)
            if isinstance(out, Cancel):
                self.ids.cancel(out.request_id, out.reason)
            elif isinstance(out, Answer):
                self.asks.answer(out)  # the response to a legacy-era request, to the plan waiting on it
            await write_accepted(h, stream)
            return
        self.routes.to_listen_streams(out)
        if seen and isinstance(seen[0], jsonrpc.Notification) and not out.actions and out.rest is None:
            await write_accepted(h, stream)
            return
        if out.immediate and len(out.actions) == 1:
            send = out.actions[0]
            if type(send) is Send:
                self.taps.emitted(send)
                data = send.data
                status = httprules.status_for(send.message) if b'"error"' in data else 200
                await write_json(h, stream, status, data)
                if self.counter.counting:
                    await self.counter.count(1)
                return
        head = httprules.head_faults(out)
        if head is not None and head.status is not None:
            await self._status_answer(h, stream, out, head)
            return
        kind = head.respond_as if head is not None and head.respond_as else httprules.choose_body(out)
        await self._stream(h, stream, out, kind, head)

    async def _resume(self, h: h11.Connection, stream: trio.abc.Stream, headers: dict[bytes, bytes]) -> None:
        """A ``GET`` resuming a stream the mock closed (``http: {retry: ...}``); 405 if none waits."""
        if self.taps.on_request is not None:
            self.taps.on_request({k.decode("latin-1"): v.decode("latin-1") for k, v in headers.items()})
        try:
            resumed = await self.resumes.resume(h, stream, headers, self.writer.write_item)
        except Dropped:
            reset_on_close(stream)
            raise ClientGone() from None
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            raise ClientGone() from None
        if not resumed:  # (claimed by another GET meanwhile)
            reject = httprules.check_head(b"GET", httprules.ENDPOINT, headers)
            assert reject is not None
            await write_reject(h, stream, reject)

    async def _status_answer(self, h: h11.Connection, stream: trio.abc.Stream, plan: Plan, head: httprules.Head) -> None:
        """``http: {status: ...}``: that status, headers and body instead of the plan's answer."""
        assert head.status is not None
        hold = Hold()
        self.lifecycle.take_busy(hold, plan)
        held = plan.has_id and not plan.immediate
        if held:
            self.ids.hold(plan.request_id)
        try:
            if head.delay:
                await trio.sleep(head.delay)
            self.taps.event("httpStatus", {"id": plan.request_id, "status": head.status})
            self.checks.answered_with(head)
            await write_status(h, stream, head)
        finally:
            self.lifecycle.not_busy(hold)
            if held:
                self.ids.release(plan.request_id)  # (a request answered by a fault is finished)

    async def _stream(self, h: h11.Connection, stream: trio.abc.Stream, plan: Plan, body: str,
                      head: httprules.Head | None = None) -> None:
        """Run a plan in its own task; write what it produces as SSE (or, ``json``, its one answer)."""
        send, receive = open_channel()
        rid = plan.request_id
        scope = trio.CancelScope()
        registered = plan.has_id and not plan.immediate
        if registered:
            self.ids.start(rid, scope)
        listen = plan.method == "subscriptions/listen" and plan.has_id
        if listen:
            self.routes.open(rid, send)
        # The client closing the connection, seen by the watcher or by a failed write, stops both the
        # plan and the writer; `closed` holds whether the plan was still running then. The cancel is
        # journaled only once the writer has stopped, so it comes after every message written.
        closed: list[bool] = []
        dropped = False
        writer = trio.CancelScope()
        run = Run(rid, send, body == "json")
        self.lifecycle.take_busy(run, plan)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.runner.run_plan, plan, run, scope, registered, listen)
            watcher = trio.CancelScope()  # (cancelled too when the stream is closed for a resume)
            nursery.start_soon(self._watch, h, stream, watcher, closed, scope, writer, rid)
            try:
                with writer:
                    if head is not None and head.delay:
                        await trio.sleep(head.delay)  # slow headers
                    if body == "json":
                        await self.writer.write_json_when_done(h, stream, receive, head)
                    else:
                        await self.writer.write_sse(h, stream, receive, head, rid, watcher.cancel)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ClientGone):
                if not closed:
                    closed.append(self.ids.running(rid, scope))
            except Dropped:
                reset_on_close(stream)
                dropped = True
            finally:
                watcher.cancel()
                scope.cancel()  # the answer is over (a plan still running was cut by endStream)
                self.lifecycle.not_busy(run)
        if closed:
            if closed[0]:  # (a plan that had ended was not cancelled: the client read its answer and left)
                self.log("info", f"request {rid!r} cancelled: the client closed its stream")
                self.taps.event("cancelled", {"id": rid, "reason": "the client closed the HTTP stream"})
            raise ClientGone()
        if dropped:
            raise ClientGone()

    async def _watch(self, h: h11.Connection, stream: trio.abc.Stream, watcher: trio.CancelScope,
                     closed: list[bool], scope: trio.CancelScope, writer: trio.CancelScope, rid: Any) -> None:
        """Read the socket while the answer is written: EOF means the client closed the stream."""
        with watcher:
            buffered = 0
            while True:
                try:
                    data = await stream.receive_some(READ_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                if not data:
                    if watcher.cancel_called:
                        return  # the mock closed the stream for a resume meanwhile: a close is no cancel now
                    if not closed:
                        closed.append(self.ids.running(rid, scope))
                    scope.cancel()  # the plan: nothing more is done for it
                    writer.cancel()  # and nothing more is written
                    return
                h.receive_data(bytes(data))  # a pipelined next request: h11 keeps it for the next cycle
                buffered += len(data)
                if buffered > httprules.MAX_HEADER_BYTES + httprules.MAX_BODY_BYTES:
                    await trio.sleep_forever()  # read no further until this answer is done
