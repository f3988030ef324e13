"""The Streamable HTTP shell: the same core, served over h11 on trio sockets.

The engine does not know which transport carries a message: each POST body is
handed to the same ``Connection`` (so the same plans, journal, checks and
expectations), with the transport's rules (``httprules``) checked on the head
before the body is read and on the decoded message before the engine sees it.
A plan that only sends one message is answered as one JSON body at once, on
the connection's own task; any other plan runs in a task of its own that puts
SSE events on a bounded channel, drained by the connection's task (the one
writer of that socket), while a watcher reads the socket: the client closing it
cancels the plan's scope, and nothing more is written for that request.
Emitted events, and notifications that name another request's subscription
(``notifications/tasks`` after a poll), go to the listen streams they are for
(``streams``, by subscription id). Plans are run by the one interpreter
(``interpret.perform``); this shell supplies the HTTP steps, answers legacy-era
requests with the responses POSTed back (``waits``), counts ``exitAfter`` in
messages, gives scripted replies ``--grace`` at a graceful stop, and offers the
control channel its surface (``controlshell.Controlled``). h11 is imported only
here, and this module only with ``--http``.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any, Callable

import h11
import trio

from mockmcp.wire import errors
from mockmcp.core import httprules
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p
from mockmcp.core.actions import (Action, Answer, Ask, Cancel, CloseStdout, Dribble, Emit, Exit, Forward, HttpFault, Plan, Send,
                      StopReading)
from mockmcp.core.connection import ShellConnection
from mockmcp.shells.interpret import no_real_server, perform
from mockmcp.shells.log import StderrLog
from mockmcp.shells.waits import Asks, TaskWake

MAX_CONNECTIONS = 8192  # open client connections at once; more are refused with 503
REQUEST_TIMEOUT = 30.0  # seconds for a request's head and body once it started
IDLE_TIMEOUT = 120.0  # seconds a kept-alive connection may wait for its next request
STREAM_BUFFER = 64  # SSE chunks queued per stream before its plan waits (or an event is dropped)
READ_SIZE = 65536

_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_JSON_HEADERS = [(b"content-type", b"application/json")]


class _Out:
    """Bytes for the wire and what they carry, journaled once written (not when queued: a reset or
    the client closing can leave queued items unwritten, and the journal says what was sent)."""

    __slots__ = ("data", "send", "raw")

    def __init__(self, data: bytes, send: Send | None = None, raw: bytes | None = None) -> None:
        self.data, self.send, self.raw = data, send, raw


class _Dribble(_Out):
    __slots__ = ("chunk", "pause")

    def __init__(self, data: bytes, chunk: int, pause: float, send: Send | None = None, raw: bytes | None = None) -> None:
        super().__init__(data, send, raw)
        self.chunk, self.pause = chunk, pause


class _Exit:
    __slots__ = ("status", "partial")

    def __init__(self, status: int, partial: bytes) -> None:
        self.status, self.partial = status, partial


class _Reset:
    """Drop the connection without ending the response (``closeStdout``, ``http: {reset: true}``)."""

    __slots__ = ("event",)

    def __init__(self, event: tuple[str, dict[str, Any]] | None = None) -> None:
        self.event = event  # journaled when the writer gets to it


class _End:
    """End the response now, before its answer (``http: {endStream: true}``)."""

    __slots__ = ("event",)

    def __init__(self, event: tuple[str, dict[str, Any]] | None = None) -> None:
        self.event = event


_Item = _Out | _Exit | _Reset | _End


class _Hold:
    """Whether a request holds up a graceful stop (``busy``: scripted work left, until it parks or is written)."""

    __slots__ = ("busy",)

    def __init__(self) -> None:
        self.busy = False


class _Run(_Hold):
    """One running plan: its id, its stream, whether it answers as JSON, its dribble setting."""

    __slots__ = ("rid", "sink", "raw_json", "dribble")

    def __init__(self, rid: Any, sink: trio.MemorySendChannel[_Item], raw_json: bool) -> None:
        super().__init__()
        self.rid, self.sink, self.raw_json = rid, sink, raw_json
        self.dribble: Dribble | None = None

    async def put(self, data: bytes, send: Send | None = None, raw: bytes | None = None) -> None:
        """Queue one message (framed as an SSE event unless the answer is one JSON body)."""
        chunk = data if self.raw_json else httprules.sse_event(data.rstrip(b"\n"))
        if self.dribble is None:
            await self.sink.send(_Out(chunk, send, raw))
        else:
            await self.sink.send(_Dribble(chunk, self.dribble.chunk, self.dribble.pause, send, raw))


class _ClientGone(Exception):
    """The client closed or reset the connection while we were answering."""


class _Dropped(Exception):
    """A scripted reset: the connection is to be dropped (with a TCP RST) mid-answer."""


class HttpShell:
    """Serves one scenario's ``Connection`` on one listening socket at ``/mcp``."""

    def __init__(
        self,
        connection: ShellConnection,
        *,
        log: StderrLog | None = None,
        tool_headers: dict[str, list[httprules.ParamHeader]] | None = None,
        allowed_origins: frozenset[str] = frozenset(),
        allowed_hosts: frozenset[str] | None = None,
        keepalive: float = 15.0,
        exit_process: Callable[[int], Any] | None = None,
        on_output: Callable[[Any, bytes], None] | None = None,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
        on_request: Callable[[dict[str, str]], None] | None = None,
        on_finding: Callable[..., None] | None = None,
        invalid_tools: dict[str, str] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        request_timeout: float = REQUEST_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
        grace: float = 1.0,
        exit_after: tuple[int, int] | None = None,
    ) -> None:
        self.conn = connection
        self.grace = grace  # seconds scripted replies get to finish at a graceful stop (stdin's EOF, control)
        self.exit_after = exit_after  # protocol.exitAfter: (messages, status)
        self.messages_written = 0
        self.busy = 0  # requests with scripted work left (not parked, not listen streams)
        self.idle = trio.Event()
        self.stopping = trio.Event()  # a graceful stop was asked for (stdin's EOF, control shutdown)
        self._accepting: list[trio.CancelScope] = []
        # The control channel (controlshell): pause and resume reading requests, its journal's tap.
        self.on_data: Callable[[bytes], None] | None = None
        self.reading_resumes = 0.0  # trio time before which no new request is read (inf: until resumed)
        self._reading_changed = trio.Event()
        self.log = log or StderrLog("warning")
        self.asks = Asks(self.log)  # legacy-era requests to the client, until their answer is POSTed (waits.py)
        self.task_wake = TaskWake()  # wakes the listen streams that watch tasks (waits.py)
        # The tools' x-mcp-header tables follow the scenario (the control channel adds and removes tools)
        # unless handed in.
        self._tables_of: Any = None if tool_headers is None else connection.engine.scenario
        self.tool_headers = tool_headers if tool_headers is not None else {}
        self.allowed_origins = allowed_origins
        self.allowed_hosts = allowed_hosts  # the Host names a loopback server answers to (None: any)
        self.keepalive = keepalive
        self.exit_process = exit_process or _hard_exit
        self.on_output = on_output
        self.on_event = on_event
        self.on_request = on_request  # the verifier: each request's headers, before its body
        self.on_finding = on_finding  # the verifier: client checks the rules found
        self.invalid_tools = invalid_tools if invalid_tools is not None else {}
        self._follow_tables = tool_headers is None and invalid_tools is None
        self._retry_after = -math.inf  # trio time before which a request ignores a Retry-After we sent
        self.request_timeout = request_timeout
        self.idle_timeout = idle_timeout
        # Ids are the sender's, and over HTTP the server cannot tell senders apart (every SDK starts at
        # 0 or 1): requests of two clients may hold one id at once. So each id maps to the plans and
        # listen streams holding it, and the engine hears an id is finished when its last holder ends.
        connection.engine.shared_ids = True
        self.streams: dict[Any, list[trio.MemorySendChannel[_Item]]] = {}  # listen request id -> its streams
        self._scopes: dict[Any, list[trio.CancelScope]] = {}  # request id -> its running plans' scopes
        self._holders: dict[Any, int] = {}  # request id -> planned requests holding it (not yet finished)
        self._stalled: set[Any] = set()  # listen streams that dropped an event (warned once)
        self._era = connection.engine.protocol.era
        self._modern_only = self._era == "modern"
        self._connections = trio.Semaphore(max_connections)

    # ---------------------------------------------------------------- serving

    async def serve(self, listeners: list[trio.SocketListener], task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Accept connections on ``listeners`` until cancelled."""
        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(self._accept_loop, listener, nursery)
            watch = self.conn.watch  # a session's connection (sessiondir) watches the log
            if watch is not None:
                nursery.start_soon(watch, self.wake_task_streams)
            task_status.started()

    def wake_task_streams(self) -> None:
        """If tasks changed (a request, another process of the session, a new named state), wake the
        streams watching them (the session's log watcher calls it too)."""
        self.task_wake.after_input(self.conn.engine)

    async def _accept_loop(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        scope = trio.CancelScope()
        self._accepting.append(scope)
        with scope:
            await self._accept(listener, nursery)

    async def _accept(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:  # EMFILE and friends: wait for connections to close
                    self.log("warning", f"accept failed ({exc}); retrying")
                    await trio.sleep(0.1)
                    continue
                nursery.start_soon(self._connection, stream)

    async def _connection(self, stream: trio.SocketStream) -> None:
        try:
            self._connections.acquire_nowait()
        except trio.WouldBlock:
            with trio.move_on_after(1):
                await _send_raw(stream, 503, b"too many connections\n")
            await trio.aclose_forcefully(stream)
            return
        h = h11.Connection(h11.SERVER, max_incomplete_event_size=httprules.MAX_HEADER_BYTES)
        try:
            while True:
                got = await self._read_request(h, stream)
                if got is None:
                    break
                request, body = got
                await self._answer(h, stream, request, body)
                if h.our_state is not h11.DONE or h.their_state is not h11.DONE:
                    break
                h.start_next_cycle()
        except (_ClientGone, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except h11.LocalProtocolError as exc:
            # A response h11 will not write is this shell's bug; it ends this connection, not the server.
            self.log("error", f"internal error answering an HTTP request (connection closed): {exc}")
        finally:
            self._connections.release()
            await trio.aclose_forcefully(stream)

    async def _read_request(self, h: h11.Connection, stream: trio.SocketStream) -> tuple[h11.Request, bytes] | None:
        """The next request's head and body, or ``None`` when the connection is to close.

        A refusal by the rules, an oversized or malformed request, or a timeout
        is answered here (then the connection closes: its body was not read).
        """
        request: h11.Request | None = None
        body = bytearray()
        # A request's time runs from its first byte (a head dribbled a byte at a time is cut too); bytes
        # already buffered (pipelined behind the last answer) start it now. Until then: the idle limit.
        started = _has_partial(h)
        deadline = trio.current_time() + (self.request_timeout if started else self.idle_timeout)
        while True:
            try:
                event = h.next_event()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint
                with trio.move_on_after(1):
                    await _send_raw(stream, status, f"malformed HTTP request: {exc}\n".encode())
                return None
            if event is h11.NEED_DATA:
                deadline += await self._while_paused()
                if request is not None and h.they_are_waiting_for_100_continue:
                    # curl sends `Expect: 100-continue` with bodies over 1 KiB and waits a second for this
                    await stream.send_all(h.send(h11.InformationalResponse(status_code=100, headers=[])))
                with trio.move_on_at(deadline) as timer:
                    data = await stream.receive_some(READ_SIZE)
                if data and not started:
                    started = True
                    deadline = trio.current_time() + self.request_timeout
                if timer.cancelled_caught:
                    if request is not None or h.their_state is not h11.IDLE or _has_partial(h):
                        with trio.move_on_after(1):
                            await _send_raw(stream, 408, b"request timed out\n")
                    return None
                # Bytes that arrived while paused (a kept-alive connection was already waiting) are
                # held, not handled, until the control channel resumes: nothing new is read meanwhile.
                deadline += await self._while_paused()
                h.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request = event
                headers = httprules.header_map(event.headers)
                reject = httprules.check_head(event.method, event.target, headers, allowed_origins=self.allowed_origins,
                                              allowed_hosts=self.allowed_hosts)
                if reject is None:
                    length = headers.get(b"content-length")
                    if length is not None and length.isdigit() and int(length) > httprules.MAX_BODY_BYTES:
                        reject = _too_large()
                if reject is not None:
                    # (a handshake-era client may GET the standalone stream of 2025-11-25: 405 is right
                    # for both eras, but only a modern-only scenario calls it a client mistake)
                    if reject.check is not None and (reject.check != "http.method" or self._modern_only):
                        self._finding(reject.check, f"{event.method.decode('latin-1')} {event.target.decode('latin-1')}:"
                                      f" {reject.reason}")
                    await self._reject(h, stream, reject, event.method == b"HEAD")
                    return None
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > httprules.MAX_BODY_BYTES:
                    await self._reject(h, stream, _too_large(), request is not None and request.method == b"HEAD")
                    return None
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None

    async def _reject(self, h: h11.Connection, stream: trio.SocketStream, reject: httprules.Reject, head: bool = False) -> None:
        """A refusal: its status and headers, and its body unless the request was a ``HEAD`` (whose
        answer has the headers a GET's would, and no body: h11 refuses to write one)."""
        headers = [*reject.headers, (b"content-length", str(len(reject.body)).encode()), (b"connection", b"close")]
        await stream.send_all(h.send(h11.Response(status_code=reject.status, headers=headers, reason=_reason(reject.status))))
        await stream.send_all((b"" if head else h.send(h11.Data(data=reject.body))) + h.send(h11.EndOfMessage()))

    # ---------------------------------------------------------------- one POST

    async def _answer(self, h: h11.Connection, stream: trio.SocketStream, request: h11.Request, body: bytes) -> None:
        headers = httprules.header_map(request.headers)
        if self._follow_tables and self._tables_of is not self.conn.engine.scenario:
            scenario = self._tables_of = self.conn.engine.scenario
            self.tool_headers = httprules.tool_header_table(scenario.tools)
            self.invalid_tools = httprules.invalid_tool_headers(scenario.tools)
        seen: list[jsonrpc.Message] = []

        def check(msg: jsonrpc.Message) -> None:
            seen.append(msg)
            if isinstance(msg, jsonrpc.ClientResponse) and self._modern_only:
                raise errors.InvalidRequest("Invalid Request: a client must not send JSON-RPC responses (each POST carries one request or notification)")
            if self.on_finding is not None and isinstance(msg, jsonrpc.Request) and msg.method == "tools/call":
                why = self.invalid_tools.get(msg.params.get("name"))  # type: ignore[arg-type]
                if why is not None:
                    self._finding("http.tool.invalidHeaders", f"tools/call of {msg.params.get('name')!r}: {why}",
                                  msg.message, msg.id)
            if self._era != "legacy":
                httprules.check_removed(msg, headers)
            try:
                httprules.check_metadata(msg, headers, self.tool_headers)
            except httprules.HeaderMismatch as exc:
                self._finding(exc.check, exc.message, getattr(msg, "message", None), exc.request_id)
                raise

        if self.on_finding is not None:
            if trio.current_time() < self._retry_after:
                self._finding("http.retryAfter", "a request came before the Retry-After of the mock's last 429/503 had passed")
                self._retry_after = -math.inf
            if body.lstrip()[:1] == b"[":
                self._finding("http.batch", "the POST body is a JSON array (a batch)")
        if self.on_request is not None:
            self.on_request({k.decode("latin-1"): v.decode("latin-1") for k, v in headers.items()})
        if not body.strip():
            error = errors.ParseError("Parse error: the POST body is empty").response()
            await self._json(h, stream, 400, jsonrpc.encode(error))
            return
        out = self.conn.handle_line(body, check)
        self.task_wake.after_input(self.conn.engine)
        if not isinstance(out, Plan):  # a notification or a legacy client's answer, accepted (a cancel performed)
            if isinstance(out, Cancel):
                self._cancel(out.request_id, out.reason)
            elif isinstance(out, Answer):
                self.asks.answer(out)  # the response to a legacy-era request, to the plan waiting on it
            await self._accepted(h, stream)
            return
        if self.streams:
            self._to_listen_streams(out)
        if seen and isinstance(seen[0], jsonrpc.Notification) and not out.actions and out.rest is None:
            await self._accepted(h, stream)
            return
        if out.immediate and len(out.actions) == 1:
            send = out.actions[0]
            if type(send) is Send:
                self._emitted(send)
                data = send.data
                status = httprules.status_for(send.message) if b'"error"' in data else 200
                await self._json(h, stream, status, data)
                if self.exit_after is not None:
                    await self._count(1)
                return
        head = httprules.head_faults(out)
        if head is not None and head.status is not None:
            await self._status_answer(h, stream, out, head)
            return
        kind = head.respond_as if head is not None and head.respond_as else httprules.choose_body(out)
        await self._stream(h, stream, out, kind, head)

    async def _json(self, h: h11.Connection, stream: trio.SocketStream, status: int, data: bytes,
                    head: httprules.Head | None = None) -> None:
        headers = _JSON_HEADERS if head is None else head.head_headers(b"application/json")
        response = h11.Response(status_code=status, reason=_reason(status),
                                headers=[*headers, (b"content-length", str(len(data)).encode())])
        await stream.send_all(h.send(response) + h.send(h11.Data(data=data)) + h.send(h11.EndOfMessage()))

    async def _status_answer(self, h: h11.Connection, stream: trio.SocketStream, plan: Plan, head: httprules.Head) -> None:
        """``http: {status: ...}``: that status, headers and body instead of the plan's answer."""
        assert head.status is not None
        hold = _Hold()
        self._take_busy(hold, plan)
        held = plan.has_id and not plan.immediate
        if held:
            self._hold(plan.request_id)
        try:
            if head.delay:
                await trio.sleep(head.delay)
            self._event("httpStatus", {"id": plan.request_id, "status": head.status})
            retry = next((v for k, v in head.headers if k.lower() == b"retry-after"), None)
            if retry is not None and retry.strip().isdigit() and head.status in (429, 503):
                self._retry_after = trio.current_time() + int(retry)
            headers = [*head.head_headers(b"text/plain"), (b"content-length", str(len(head.body)).encode())]
            response = h11.Response(status_code=head.status, reason=_reason(head.status), headers=headers)
            await stream.send_all(h.send(response) + h.send(h11.Data(data=head.body)) + h.send(h11.EndOfMessage()))
        finally:
            self._not_busy(hold)
            if held:
                self._release(plan.request_id)  # (a request answered by a fault is finished)

    async def _accepted(self, h: h11.Connection, stream: trio.SocketStream) -> None:
        head = h11.Response(status_code=202, reason=b"Accepted", headers=[(b"content-length", b"0")])
        await stream.send_all(h.send(head) + h.send(h11.EndOfMessage()))

    def _cancel(self, rid: Any, reason: str | None) -> None:
        """A ``notifications/cancelled`` POSTed anyway (stdio's form): honoured like on stdio (every
        running request with that id: the server cannot tell whose it is)."""
        for scope in self._scopes.get(rid, ()):
            scope.cancel()
            self._event("cancelled", {"id": rid, "reason": reason})

    def _hold(self, rid: Any) -> None:
        """A planned request holds ``rid`` until it ends (``_release``)."""
        self._holders[rid] = self._holders.get(rid, 0) + 1

    def _release(self, rid: Any) -> None:
        """A request holding ``rid`` ended (answered, cancelled, cut by a fault): the engine hears the
        id is finished once no other request holds it."""
        left = self._holders.get(rid, 0) - 1
        if left > 0:
            self._holders[rid] = left
            return
        self._holders.pop(rid, None)
        self.conn.finished(rid)

    def _running(self, rid: Any, scope: trio.CancelScope) -> bool:
        return any(s is scope for s in self._scopes.get(rid, ()))

    async def _stream(self, h: h11.Connection, stream: trio.SocketStream, plan: Plan, body: str,
                      head: httprules.Head | None = None) -> None:
        """Run a plan in its own task; write what it produces as SSE (or, ``json``, its one answer)."""
        send, receive = trio.open_memory_channel[_Item](STREAM_BUFFER)
        rid = plan.request_id
        scope = trio.CancelScope()
        registered = plan.has_id and not plan.immediate
        if registered:
            self._hold(rid)
            self._scopes.setdefault(rid, []).append(scope)
        listen = plan.method == "subscriptions/listen" and plan.has_id
        if listen:
            self.streams.setdefault(rid, []).append(send)
        # The client closing the connection, seen by the watcher or by a failed write, stops both the
        # plan and the writer; `closed` holds whether the plan was still running then. The cancel is
        # journaled only once the writer has stopped, so it comes after every message written.
        closed: list[bool] = []
        dropped = False
        writer = trio.CancelScope()
        run = _Run(rid, send, body == "json")
        self._take_busy(run, plan)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_plan, plan, run, scope, registered, listen)
            watcher = trio.CancelScope()
            nursery.start_soon(self._watch, h, stream, watcher, closed, scope, writer, rid)
            try:
                with writer:
                    if head is not None and head.delay:
                        await trio.sleep(head.delay)  # slow headers
                    if body == "json":
                        await self._write_json_when_done(h, stream, receive, head)
                    else:
                        await self._write_sse(h, stream, receive, head)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, _ClientGone):
                if not closed:
                    closed.append(self._running(rid, scope))
            except _Dropped:
                _reset_on_close(stream)
                dropped = True
            finally:
                watcher.cancel()
                scope.cancel()  # the answer is over (a plan still running was cut by endStream)
                self._not_busy(run)
        if closed:
            if closed[0]:  # (a plan that had ended was not cancelled: the client read its answer and left)
                self.log("info", f"request {rid!r} cancelled: the client closed its stream")
                self._event("cancelled", {"id": rid, "reason": "the client closed the HTTP stream"})
            raise _ClientGone()
        if dropped:
            raise _ClientGone()

    async def _watch(self, h: h11.Connection, stream: trio.SocketStream, watcher: trio.CancelScope,
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
                    if not closed:
                        closed.append(self._running(rid, scope))
                    scope.cancel()  # the plan: nothing more is done for it
                    writer.cancel()  # and nothing more is written
                    return
                h.receive_data(data)  # a pipelined next request: h11 keeps it for the next cycle
                buffered += len(data)
                if buffered > httprules.MAX_HEADER_BYTES + httprules.MAX_BODY_BYTES:
                    await trio.sleep_forever()  # read no further until this answer is done

    async def _write_sse(self, h: h11.Connection, stream: trio.SocketStream, receive: trio.MemoryReceiveChannel[_Item],
                         head: httprules.Head | None = None) -> None:
        headers = _SSE_HEADERS if head is None else [*head.head_headers(b"text/event-stream"), *_SSE_HEADERS[1:]]
        await stream.send_all(h.send(h11.Response(status_code=200, reason=b"OK", headers=headers)))
        keepalive = self.keepalive if self.keepalive > 0 else math.inf
        async with receive:
            while True:
                # Only the wait is timed: a write cut by a timeout would leave half an event on the wire.
                with trio.move_on_after(keepalive) as quiet:
                    item = await _receive(receive)
                if quiet.cancelled_caught:
                    await stream.send_all(h.send(h11.Data(data=httprules.KEEPALIVE)))
                    continue
                if item is None:
                    break
                if isinstance(item, _End):
                    self._item_event(item)
                    break
                await self._write_item(h, stream, item)
        await stream.send_all(h.send(h11.EndOfMessage()))

    async def _write_item(self, h: h11.Connection, stream: trio.SocketStream, item: _Item) -> None:
        match item:
            case _Dribble():
                data = item.data
                for i in range(0, len(data), item.chunk):
                    await stream.send_all(h.send(h11.Data(data=data[i:i + item.chunk])))
                    if i + item.chunk < len(data):
                        await trio.sleep(item.pause)
                self._written(item)
                if self.exit_after is not None:
                    await self._count(1)
            case _Out():
                await stream.send_all(h.send(h11.Data(data=item.data)))
                self._written(item)
                if self.exit_after is not None:
                    await self._count(1)
            case _Exit():
                if item.partial:
                    await stream.send_all(h.send(h11.Data(data=item.partial)))
                self.exit_process(item.status)
                await trio.sleep_forever()
            case _Reset():
                self._item_event(item)
                raise _Dropped()  # (the connection is dropped without ending the response)

    async def _write_json_when_done(self, h: h11.Connection, stream: trio.SocketStream,
                                    receive: trio.MemoryReceiveChannel[_Item], head: httprules.Head | None = None) -> None:
        """One JSON body, written when the plan gave its answer (the last message it sent).

        A dribbled answer is written in its chunks; a ``reset`` drops the
        connection halfway through the answer's body; ``endStream`` answers
        with an empty body.
        """
        final: _Out | None = None
        reset = False
        async with receive:
            while True:
                item = await _receive(receive)
                if item is None:
                    break
                if isinstance(item, _End):
                    self._item_event(item)
                    break
                if isinstance(item, _Out):
                    final = item
                elif isinstance(item, _Reset):
                    self._item_event(item)
                    reset = True
                else:
                    await self._write_item(h, stream, item)
        data = final.data if final is not None else b""
        status = httprules.status_for(jsonrpc.parse(data)) if b'"error"' in data and _is_json(data) else 200
        if not reset and not isinstance(final, _Dribble):
            await self._json(h, stream, status, data, head)
            if final is not None:
                self._written(final)
                if self.exit_after is not None:
                    await self._count(1)
            return
        headers = _JSON_HEADERS if head is None else head.head_headers(b"application/json")
        response = h11.Response(status_code=status, reason=_reason(status),
                                headers=[*headers, (b"content-length", str(len(data)).encode())])
        await stream.send_all(h.send(response))
        if reset:
            if data:
                await stream.send_all(h.send(h11.Data(data=data[: len(data) // 2])))
            raise _Dropped()  # (dropped mid-body, as scripted)
        assert isinstance(final, _Dribble)
        await self._write_item(h, stream, final)
        await stream.send_all(h.send(h11.EndOfMessage()))

    # ---------------------------------------------------------------- plans

    async def _run_plan(self, plan: Plan, run: _Run, scope: trio.CancelScope, registered: bool, listen: bool) -> None:
        rid, sink = plan.request_id, run.sink
        with scope:
            try:
                for action in plan.all_actions():
                    await perform(self, action, run)
            except trio.BrokenResourceError:
                pass  # the answer is over (endStream, a reset, the client gone): the rest goes nowhere
            finally:
                sink.close()
                if listen and _drop(self.streams, rid, sink):
                    self._stalled.discard(rid)
                if registered:
                    _drop(self._scopes, rid, scope)
                    self._release(rid)

    # ---------------------------------------------------------------- the HTTP steps (interpret.Transport)

    async def send_step(self, send: Send, run: _Run) -> None:
        await run.put(send.data, send)

    async def raw_step(self, data: bytes, run: _Run) -> None:
        await run.put(data, None, data)

    async def emit_step(self, emit: Emit, run: _Run) -> None:
        await self._fan_out(emit, run.sink)

    async def park_step(self, run: _Run) -> None:
        self._not_busy(run)  # a hang holds up no graceful stop
        await trio.sleep_forever()

    async def exit_step(self, exit: Exit, run: _Run) -> None:
        self._event("exit", {"status": exit.status, "id": run.rid})
        await run.sink.send(_Exit(exit.status, exit.partial))
        await trio.sleep_forever()

    def stop_reading_step(self, stop: StopReading, run: _Run) -> None:
        self.log("info", "stopReading has no effect over HTTP (each request is its own POST)")

    async def close_step(self, close: CloseStdout, run: _Run) -> None:
        # Over HTTP the scripted "stdout closed" is the connection dropped mid-answer.
        await run.sink.send(_Reset(("closeStdout", {"id": run.rid})))

    async def forward_step(self, forward: Forward, run: _Run) -> None:
        msg = no_real_server(run.rid)  # (mockmcp proxy is stdio: there is no real server behind an HTTP mock)
        data = jsonrpc.encode(msg)
        await run.put(data, Send(msg, data, True))

    async def ask_step(self, ask: Ask, run: _Run) -> None:
        # A legacy-era request to the client goes on this request's stream (2025-11-25 sends it
        # there); the client POSTs its response, which `_answer` routes to the wait by id.
        async def write(message: Any, data: bytes) -> None:
            await run.put(data, Send(message, data))

        await self.asks.ask(ask, write)

    async def http_fault_step(self, fault: HttpFault, run: _Run) -> None:
        # (its head options were applied before the head was written: see head_faults)
        if fault.write is not None:
            await run.sink.send(_Out(fault.write, None, fault.write))  # unframed: malformed SSE on purpose
        if fault.end_stream:
            await run.sink.send(_End(("httpEndStream", {"id": run.rid})))
        if fault.reset:
            await run.sink.send(_Reset(("httpReset", {"id": run.rid})))

    async def _fan_out(self, emit: Emit, own: trio.MemorySendChannel[_Item]) -> None:
        """Deliver an event to the listen streams that want it (the engine says which, in order)."""
        engine = self.conn.engine
        sids = engine.session.listeners(emit.event, emit.uri, emit.only, emit.has_only)
        if not sids:
            return
        for sid, send in zip(sids, engine.fan_out(emit)):
            for target in tuple(self.streams.get(sid, ())):
                if target is own:
                    await own.send(_Out(httprules.sse_event(send.data.rstrip(b"\n")), send))
                else:
                    self._deliver(sid, target, send)

    def _to_listen_streams(self, plan: Plan) -> None:
        """Move a plan's notifications for other requests' listen streams onto those streams.

        On stdio every message shares one pipe; over HTTP a notification that carries
        another request's subscription id (``notifications/tasks`` after a ``tasks/get``
        changed a watched task) belongs on that listen stream, not in this answer."""
        kept: list[Action] = []
        moved = False
        for action in plan.actions:
            if type(action) is Send and not action.final:
                sid = _subscription_of(action.message)
                targets = self.streams.get(sid) if sid is not None and sid != plan.request_id else None
                if targets:
                    for target in targets:
                        self._deliver(sid, target, action)
                    moved = True
                    continue
            kept.append(action)
        if moved:
            plan.actions = kept

    def _deliver(self, sid: Any, target: trio.MemorySendChannel[_Item], send: Send) -> None:
        """One message onto a listen stream without waiting (a stream that is not read loses it)."""
        try:
            target.send_nowait(_Out(httprules.sse_event(send.data.rstrip(b"\n")), send))  # (journaled once written)
        except trio.WouldBlock:
            if sid not in self._stalled:  # once per stream: a stalled reader must not flood stderr
                self._stalled.add(sid)
                self.log("warning", f"listen stream {sid!r} is not being read; events for it are dropped")
            self._event("dropped", {"id": sid, "method": send.message.get("method")})
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def _finding(self, check: str, text: str, message: Any = None, request_id: Any = None) -> None:
        if self.on_finding is not None:
            self.on_finding(check, text, message, request_id)

    def _emitted(self, send: Send) -> None:
        if self.on_output is not None:
            self.on_output(send.message, send.data)
        if self.on_data is not None:
            self.on_data(send.data)

    def _item_event(self, item: _Reset | _End) -> None:
        if item.event is not None:
            self._event(*item.event)

    def _written(self, item: _Out) -> None:
        if self.on_output is not None:
            if item.send is not None:
                self.on_output(item.send.message, item.send.data)
            elif item.raw is not None:
                self.on_output(None, item.raw)
        if self.on_data is not None:
            data = item.send.data if item.send is not None else item.raw
            if data is not None:
                self.on_data(data)

    # ---------------------------------------------------------------- process-wide: exitAfter, grace, control

    async def _count(self, messages: int) -> None:
        """``protocol.exitAfter``: exit right after the Nth message written (a JSON body or an SSE event)."""
        if self.exit_after is None:
            return
        self.messages_written += messages
        limit, status = self.exit_after
        if self.messages_written >= limit:
            self.log("info", f"exiting with status {status} after {limit} messages written (protocol.exitAfter)")
            self.exit_process(status)
            await trio.sleep_forever()

    def _take_busy(self, run: _Hold, plan: Plan) -> None:
        if plan.method != "subscriptions/listen":  # (streams live until closed, as on stdio)
            run.busy = True
            self.busy += 1

    def _not_busy(self, run: _Hold) -> None:
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

    def stop(self) -> None:
        """End as at the end of stdin (the control channel's graceful shutdown), whatever ``ignoreEof`` says."""
        self.stopping.set()
        self.resume_reading()

    def pause_reading(self, seconds: float | None) -> None:
        """Read no new HTTP request (on any connection) until resumed or ``seconds`` passed."""
        self.reading_resumes = math.inf if seconds is None else trio.current_time() + seconds
        self.log("info", "stopped reading HTTP requests (control)" + ("" if seconds is None else f" for {seconds:g} s"))
        self._event("stopReading", {"id": None, "seconds": seconds})

    def resume_reading(self) -> None:
        self.reading_resumes = 0.0
        self._reading_changed.set()
        self._reading_changed = trio.Event()

    async def _while_paused(self) -> float:
        """Wait while the control channel paused reading; the seconds waited (not the client's delay)."""
        if self.reading_resumes <= trio.current_time():
            return 0.0
        paused = trio.current_time()
        while self.reading_resumes > trio.current_time():
            with trio.move_on_at(self.reading_resumes):
                await self._reading_changed.wait()
        return trio.current_time() - paused

    async def deliver(self, sends: list[Send]) -> None:
        """Messages made outside a plan (the control channel's events) onto the listen streams they name."""
        for send in sends:
            sid = _subscription_of(send.message)
            targets = self.streams.get(sid) if sid is not None else None
            if not targets:
                self.log("debug", f"no listen stream for {send.message.get('method')!r}; dropped (HTTP has no stream but listen streams)")
                continue
            for target in targets:
                self._deliver(sid, target, send)
        await trio.lowlevel.checkpoint()

    async def crash(self, status: int) -> None:
        """The control channel's crash: exit at once with ``status``."""
        self._event("exit", {"status": status, "id": None})
        self.exit_process(status)
        await trio.sleep_forever()

    def _event(self, name: str, fields: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(name, fields)


def _drop(table: dict[Any, list[Any]], key: Any, item: Any) -> bool:
    """Remove ``item`` (by identity) from ``table[key]``, and the key once empty; was it there?"""
    items = table.get(key)
    if items is None:
        return False
    for i, other in enumerate(items):
        if other is item:
            del items[i]
            if not items:
                del table[key]
            return True
    return False


async def _receive(channel: trio.MemoryReceiveChannel[_Item]) -> _Item | None:
    try:
        return await channel.receive()
    except trio.EndOfChannel:
        return None


def _reset_on_close(stream: Any) -> None:
    """Make the coming close a TCP RST (SO_LINGER 0), as a crashed server's connection would end."""
    import socket
    import struct

    sock = getattr(stream, "socket", None)
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass


def _subscription_of(message: Any) -> Any:
    """The subscription id a notification carries in ``params._meta`` (``None``: none)."""
    params = message.get("params") if type(message) is dict else None
    meta = params.get("_meta") if type(params) is dict else None
    return meta.get(p.META_SUBSCRIPTION_ID) if type(meta) is dict else None


def _is_json(data: bytes) -> bool:
    try:
        jsonrpc.parse(data)
    except errors.ClientError:
        return False
    return True


def _has_partial(h: h11.Connection) -> bool:
    return bool(h.trailing_data[0])


def _too_large() -> httprules.Reject:
    return httprules.Reject(413, "Content Too Large", headers=((b"content-type", b"text/plain"),),
                            body=f"the body exceeds the {httprules.MAX_BODY_BYTES}-byte limit\n".encode())


def _reason(status: int) -> bytes:
    return httprules.REASONS.get(status, b"Status")


async def _send_raw(stream: trio.SocketStream, status: int, body: bytes) -> None:
    """An answer written without h11 (for requests h11 could not parse, or over the connection cap)."""
    head = (f"HTTP/1.1 {status} ".encode() + _reason(status) + b"\r\ncontent-type: text/plain\r\n"
            + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode())
    try:
        await stream.send_all(head + body)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


def _hard_exit(status: int) -> None:
    try:
        sys.stderr.flush()
    finally:
        os._exit(status)


# ---------------------------------------------------------------- the process


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


async def serve_process(shell: HttpShell, host: str, port: int, ignore_eof: bool = False,
                        ignore_sigterm: bool = False, print_url: Callable[[str], Any] | None = None,
                        control: tuple[Any, Any] | None = None) -> int:
    """Listen, print the endpoint URL as the first stdout line, serve until stdin's EOF or a signal.

    ``control``: a bound control server and its socket (``--control``), served beside. At EOF (or
    the control channel's graceful shutdown) no more connections are accepted and scripted replies
    get ``grace`` seconds, as on stdio; a signal stops at once."""
    from mockmcp.shells.signals import shutdown_signals

    # The signal receiver is open before the URL is printed: a suite that stops the mock as
    # soon as it has read the URL must find SIGTERM handled, not the default action.
    with shutdown_signals(ignore_sigterm) as received:
        listeners = (await trio.open_tcp_listeners(port, host=host))[:1]  # one socket: one port, one URL
        bound = listeners[0].socket.getsockname()
        url = url_for(host, bound[1])
        async with trio.open_nursery() as nursery:
            await nursery.start(shell.serve, listeners)
            if control is not None:
                await nursery.start(control[0].serve, control[1])
            (print_url or _print_url)(url)
            shell.log("info", f"serving Streamable HTTP at {url}")
            nursery.start_soon(received.cancel_on_first, nursery.cancel_scope, shell.log)
            nursery.start_soon(_until_eof, shell, ignore_eof)
            await shell.stopping.wait()
            await shell.drain()
            nursery.cancel_scope.cancel()
    return 0


async def _until_eof(shell: HttpShell, ignore_eof: bool) -> None:
    stdin = trio.lowlevel.FdStream(os.dup(0))
    try:
        while True:
            try:
                data = await stdin.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                data = b""
            if not data:
                break  # what arrives on stdin is ignored: the protocol is on the socket
    finally:
        await trio.aclose_forcefully(stdin)
    if ignore_eof:
        shell.log("info", "stdin closed; ignoring EOF as scripted (waiting for a signal or a control shutdown)")
        return
    shell.log("debug", "stdin closed; shutting down")
    shell.stopping.set()


def _print_url(url: str) -> None:
    os.write(1, (url + "\n").encode())


def run_http(args: Any, scenario: Any, conn: ShellConnection, log: StderrLog, observers: dict[str, Any],
             control: Any = None) -> int:
    """``mockmcp run SCENARIO --http [HOST:]PORT``: the HTTP shell in this process's trio run."""
    host, port = args.http
    ea = scenario.protocol.exitAfter
    shell = HttpShell(
        conn,
        log=log,
        allowed_origins=frozenset(args.allow_origin or ()),
        # (bound elsewhere, with --http-any-host, the server has no one name of its own to insist on)
        allowed_hosts=httprules.loopback_hosts(host, args.allow_host or ()) if httprules.loopback(host) else None,
        request_timeout=args.http_request_timeout,
        keepalive=args.sse_keepalive,
        on_output=observers.get("output"),
        on_event=observers.get("event"),
        on_request=observers.get("httpRequest"),
        on_finding=observers.get("httpFinding"),
        grace=args.grace,
        exit_after=(ea.messages, ea.status) if ea is not None else None,
    )
    listening = None
    if control is not None:
        from mockmcp.shells.control import listen

        listening = listen(args.control, control, shell, conn, log)
        if listening is None:
            return 2
    return trio.run(serve_process, shell, host, port, scenario.protocol.ignoreEof, scenario.protocol.ignoreSigterm,
                    None, listening)
