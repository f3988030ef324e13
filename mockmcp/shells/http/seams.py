"""The Protocols between the HTTP shell's parts, where one part calls another that does I/O.

Each part is handed its collaborators when it is made (``shell.HttpShell`` wires
them); these say what a part needs of another, so either side can be replaced
(a test's stand-in, another writer) without the other knowing.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import h11
import trio

from mockmcp.core import httprules
from mockmcp.core.actions import Emit, Plan, Send
from mockmcp.shells.http.channel import Item, Run, Sink, Source


class Answers(Protocol):
    """One request read whole, answered (``exchange.Exchange``), for the connection loop. ``headers``:
    the request's header map (``httprules.header_map``), built once when its head was read."""

    async def answer(self, h: h11.Connection, stream: trio.abc.Stream, request: h11.Request,
                     headers: dict[bytes, bytes], body: bytes) -> None: ...


class HeadCheck(Protocol):
    """A request's refusal by its head, before its body is read (``checks.RequestChecks``, or the
    authorization front ``auth.AuthFront`` in front of it), for the connection loop."""

    def head(self, request: h11.Request, headers: dict[bytes, bytes]) -> httprules.Reject | None: ...


class Paused(Protocol):
    """The control channel's pause of reading requests (``lifecycle.ReadingGate``)."""

    async def while_paused(self) -> float: ...


class PlanRunner(Protocol):
    """Runs a plan's actions in the plan's own task, onto its channel (``transport.HttpTransport``)."""

    async def run_plan(self, plan: Plan, run: Run, scope: trio.CancelScope, registered: bool, listen: bool) -> None: ...


class AnswerWriter(Protocol):
    """Drains a plan's channel onto the socket (``sse.StreamWriter``), as SSE or as one JSON body."""

    async def write_sse(self, h: h11.Connection, stream: trio.abc.Stream, receive: Source,
                        head: httprules.Head | None = None, rid: Any = None,
                        detached: Callable[[], None] | None = None) -> None: ...

    async def write_item(self, h: h11.Connection, stream: trio.abc.Stream, item: Item) -> None: ...

    async def write_json_when_done(self, h: h11.Connection, stream: trio.abc.Stream, receive: Source,
                                   head: httprules.Head | None = None) -> None: ...


class Routes(Protocol):
    """The listen streams by subscription id (``routing.ListenRoutes``)."""

    def open(self, sid: Any, sink: Sink) -> None: ...

    def close(self, sid: Any, sink: Sink) -> None: ...

    async def fan_out(self, emit: Emit, own: Sink) -> None: ...

    def to_listen_streams(self, plan: Plan) -> None: ...

    async def deliver_all(self, sends: list[Send]) -> None: ...
