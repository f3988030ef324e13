"""The connection loop: accept, read each request within its limits and time, hand it on.

One task per client connection, the one writer of its socket. A request is read
whole (head, then body) before it is answered; what the rules refuse by its head,
an oversized or malformed request and a request too slow to arrive are answered
here, and that connection then closes (its body was not read). More connections
than ``max_connections`` at once are refused with ``503``; ``accept`` failing
(EMFILE and friends) waits for connections to close.
"""

from __future__ import annotations

from typing import Callable

import h11
import trio

from mockmcp.core import httprules
from mockmcp.core.connection import Watch
from mockmcp.shells.http.lifecycle import Lifecycle
from mockmcp.shells.http.responses import READ_SIZE, ClientGone, has_partial, send_raw, too_large, write_reject
from mockmcp.shells.http.seams import Answers, HeadCheck, Paused
from mockmcp.shells.log import StderrLog

MAX_CONNECTIONS = 8192  # open client connections at once; more are refused with 503
REQUEST_TIMEOUT = 30.0  # seconds for a request's head and body once it started
IDLE_TIMEOUT = 120.0  # seconds a kept-alive connection may wait for its next request


class ConnectionLoop:
    def __init__(
        self,
        answers: Answers,
        checks: HeadCheck,
        gate: Paused,
        lifecycle: Lifecycle,
        log: StderrLog,
        *,
        watch: Watch | None = None,
        wake: Callable[[], None] = lambda: None,
        max_connections: int = MAX_CONNECTIONS,
        request_timeout: float = REQUEST_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self.answers = answers
        self.checks = checks
        self.gate = gate
        self.lifecycle = lifecycle
        self.log = log
        self.watch = watch  # a session's connection (sessiondir) watches the log
        self.wake = wake  # what the watch calls when another process changed tasks
        self.request_timeout = request_timeout
        self.idle_timeout = idle_timeout
        self._connections = trio.Semaphore(max_connections)

    async def serve(self, listeners: list[trio.SocketListener],
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept connections on ``listeners`` until cancelled."""
        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(self._accept_loop, listener, nursery)
            if self.watch is not None:
                nursery.start_soon(self.watch, self.wake)
            task_status.started()

    async def _accept_loop(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        with self.lifecycle.accepting():
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
                nursery.start_soon(self.connection, stream)

    async def connection(self, stream: trio.abc.Stream) -> None:
        """Serve one client connection until it closes (the stream is closed here)."""
        try:
            self._connections.acquire_nowait()
        except trio.WouldBlock:
            with trio.move_on_after(1):
                await send_raw(stream, 503, b"too many connections\n")
            await trio.aclose_forcefully(stream)
            return
        h = h11.Connection(h11.SERVER, max_incomplete_event_size=httprules.MAX_HEADER_BYTES)
        try:
            while True:
                got = await self._read_request(h, stream)
                if got is None:
                    break
                request, headers, body = got
                await self.answers.answer(h, stream, request, headers, body)
                if h.our_state is not h11.DONE or h.their_state is not h11.DONE:
                    break
                h.start_next_cycle()
        except (ClientGone, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except h11.LocalProtocolError as exc:
            # A response h11 will not write is this shell's bug; it ends this connection, not the server.
            self.log("error", f"internal error answering an HTTP request (connection closed): {exc}")
        finally:
            self._connections.release()
            await trio.aclose_forcefully(stream)

    async def _read_request(self, h: h11.Connection,
                            stream: trio.abc.Stream) -> tuple[h11.Request, dict[bytes, bytes], bytes] | None:
        """The next request's head, its header map and its body, or ``None`` when the connection is to close.

        A refusal by the rules, an oversized or malformed request, or a timeout
        is answered here (then the connection closes: its body was not read).
        """
        request: h11.Request | None = None
        headers: dict[bytes, bytes] = {}
        body = bytearray()
        # A request's time runs from its first byte (a head dribbled a byte at a time is cut too); bytes
        # already buffered (pipelined behind the last answer) start it now. Until then: the idle limit.
        started = has_partial(h)
        deadline = trio.current_time() + (self.request_timeout if started else self.idle_timeout)
        while True:
            try:
                event = h.next_event()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint
                with trio.move_on_after(1):
                    await send_raw(stream, status, f"malformed HTTP request: {exc}\n".encode())
                return None
            if event is h11.NEED_DATA:
                deadline += await self.gate.while_paused()
                if request is not None and h.they_are_waiting_for_100_continue:
                    # curl sends `Expect: 100-continue` with bodies over 1 KiB and waits a second for this
                    await stream.send_all(h.send(h11.InformationalResponse(status_code=100, headers=[])))
                with trio.move_on_at(deadline) as timer:
                    data = await stream.receive_some(READ_SIZE)
                if data and not started:
                    started = True
                    deadline = trio.current_time() + self.request_timeout
                if timer.cancelled_caught:
                    if request is not None or h.their_state is not h11.IDLE or has_partial(h):
                        with trio.move_on_after(1):
                            await send_raw(stream, 408, b"request timed out\n")
                    return None
                # Bytes that arrived while paused (a kept-alive connection was already waiting) are
                # held, not handled, until the control channel resumes: nothing new is read meanwhile.
                deadline += await self.gate.while_paused()
                h.receive_data(bytes(data))  # (bytes already: the same object; an in-memory stream gives a bytearray)
                continue
            if isinstance(event, h11.Request):
                request = event
                headers = httprules.header_map(event.headers)
                reject = self.checks.head(event, headers)
                if reject is not None:
                    await write_reject(h, stream, reject, event.method == b"HEAD")
                    return None
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > httprules.MAX_BODY_BYTES:
                    await write_reject(h, stream, too_large(), request is not None and request.method == b"HEAD")
                    return None
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, headers, bytes(body)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None
