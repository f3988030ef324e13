"""Bytes in, plans out: framing, decoding and the one error boundary.

``Connection`` is the sans-I/O face of the server, in the manner of h11: the
shell feeds it whatever stdin produced and runs the plans it returns. Every
``ClientError`` raised anywhere below is turned into its JSON-RPC error
response here, and nowhere else. Observers (the journal and the client
verifier) see every inbound line and every decoded message.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, ClassVar, Protocol

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.core.actions import Cancel, Output, Plan, Send
from mockmcp.core.engine import Engine
from mockmcp.wire.framing import DEFAULT_MAX_LINE, LineFramer, Oversized

InboundObserver = Callable[[bytes | Oversized, "jsonrpc.Message | None", "errors.ClientError | None"], None]
PlanObserver = Callable[[Plan], None]
# A watch on state other processes share (a session directory's log): runs while the shell serves,
# calling its argument (the shell's "tasks may have changed") when another process changed it.
Watch = Callable[[Callable[[], None]], Awaitable[None]]


class StdioConnection(Protocol):
    """What the stdio shell (``shells.stdio.Shell``) drives: bytes in, plans out, ids finished, and a
    ``watch`` to run beside serving. ``record.proxy_connection.ProxyConnection`` is one too."""

    @property
    def engine(self) -> Engine: ...

    @property
    def watch(self) -> Watch | None:
        """Run beside serving to notice other processes' changes (``None``: nothing to watch)."""
        ...

    def receive_data(self, data: bytes) -> list[Output]: ...

    def receive_eof(self) -> list[Output]: ...

    def finished(self, request_id: Any) -> None: ...


class ShellConnection(StdioConnection, Protocol):
    """The connection a mock's shell drives: ``Connection``, or a session directory's
    ``SessionConnection`` that handles each input inside the session's lock. The HTTP shell hands
    it one message at a time (``handle_line``); the journal, the verifier and the control channel
    watch it through ``observers`` and ``plan_observers``."""

    @property
    def observers(self) -> list[InboundObserver]:
        """Called with every inbound line and its decoded message."""
        ...

    @property
    def plan_observers(self) -> list[PlanObserver]:
        """Called with every plan made (which rule answered, for the journal)."""
        ...

    def handle_line(
        self, line: bytes | Oversized, check: Callable[[jsonrpc.Message], None] | None = None
    ) -> Output | None: ...


class Connection:
    watch: ClassVar[None] = None  # one process alone: no one else changes its state

    def __init__(self, engine: Engine, *, max_line: int = DEFAULT_MAX_LINE) -> None:
        self.engine = engine
        self.framer = LineFramer(max_line)
        self.observers: list[InboundObserver] = []
        self.plan_observers: list[PlanObserver] = []  # which rule answered (for the journal)
        self.id_null_on_parse_error = engine.protocol.parseErrorIdNull

    def receive_data(self, data: bytes) -> list[Output]:
        out: list[Output] = []
        for line in self.framer.feed(data):
            result = self.handle_line(line)
            if result is not None:
                out.append(result)
        return out

    def receive_eof(self) -> list[Output]:
        out: list[Output] = []
        for line in self.framer.close():
            result = self.handle_line(line)
            if result is not None:
                out.append(result)
        return out

    def handle_line(
        self, line: bytes | Oversized, check: Callable[[jsonrpc.Message], None] | None = None
    ) -> Output | None:
        """One message in, its plan out. ``check`` (a transport's rules on the decoded message,
        e.g. HTTP's request headers against the body) may raise a ``ClientError``, answered here."""
        msg: jsonrpc.Message | None = None
        try:
            if isinstance(line, Oversized):
                raise errors.InvalidRequest(
                    f"Invalid Request: message of {line.length} bytes exceeds the {self.framer.max_line}-byte line limit"
                )
            if line[:1] != b"{" and not line.strip():
                return None  # a blank line
            msg = jsonrpc.classify(jsonrpc.parse(line))  # (decode(), without its frame)
            if self.observers:
                self._observe(line, msg, None)
            if check is not None:
                check(msg)
            # (a request, most lines, straight to its entry point: Engine.handle's first test)
            result = self.engine.handle_request(msg) if type(msg) is jsonrpc.Request else self.engine.handle(msg)
            if self.plan_observers and isinstance(result, Plan):
                for see in self.plan_observers:
                    see(result)
            return result
        except errors.ClientError as exc:
            if msg is None:
                self._observe(line, None, exc)
            return self._error_plan(exc, msg)

    def _observe(self, line: bytes | Oversized, msg: jsonrpc.Message | None, exc: errors.ClientError | None) -> None:
        for observer in self.observers:
            observer(line, msg, exc)

    def _error_plan(self, exc: errors.ClientError, msg: jsonrpc.Message | None) -> Plan | None:
        if isinstance(msg, jsonrpc.Notification) or exc.notification:
            return None  # notifications never get a response, not even an error
        rid = exc.request_id
        if not exc.has_id and self.id_null_on_parse_error:
            rid = None  # the scenario asks for the spec's `"id": null` form
        response = errors.error_response(rid, exc.code, exc.message, exc.data)
        method = msg.method if isinstance(msg, jsonrpc.Request) else None
        send = Send(response, jsonrpc.encode(response), True)
        return Plan(response.get("id"), [send], method, None, immediate=True, has_id=exc.has_id)

    def finished(self, request_id: Any) -> None:
        self.engine.finished(request_id)


__all__ = ["Connection", "Cancel", "Plan", "ShellConnection", "StdioConnection"]
