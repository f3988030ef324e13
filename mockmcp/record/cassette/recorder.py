"""The recorder: the lines of one recorded session paired into exchanges.

``Recorder`` is fed every line that passed between a client and a real server
(``client_line`` / ``server_line``, with the shell's clock) and pairs them up:
each client request with the server's progress, log messages, server-to-client
requests (the legacy era's elicitation and sampling), garbage lines and final
answer. Given the ``Redactor`` the cassette will be built with, it learns the
secrets as they pass. What one exchange keeps is bounded (``MAX_EVENTS``,
``MAX_EVENT_BYTES``). Sans-I/O: the clock and the bytes are handed in.
"""

from __future__ import annotations

import json
from typing import Any

from mockmcp.record.redact import Redactor
from mockmcp.wire import errors, jsonrpc
from mockmcp.wire import protocol as p

# Requests that give no rule: the protocol's plumbing (the identity and lists are recorded as the
# scenario's server, capabilities and definitions; the connection's state is the mock's own).
NOT_RECORDED = frozenset({p.DISCOVER, p.INITIALIZE, "ping", p.SUBSCRIPTIONS_LISTEN,
                          p.TOOLS_LIST, p.PROMPTS_LIST, p.RESOURCES_LIST, p.RESOURCE_TEMPLATES_LIST,
                          p.LEGACY_SET_LEVEL, p.LEGACY_SUBSCRIBE, p.LEGACY_UNSUBSCRIBE})
LOG_LEVELS = frozenset(p.LOG_LEVELS)
MAX_RAW = 64 * 1024  # a garbage line is kept up to this many characters
# What one exchange keeps of what the server sends while it is in flight (progress, logs, requests
# to the client, garbage lines): the first MAX_EVENTS of them, within MAX_EVENT_BYTES of their lines.
# The rest is passed on but not recorded (counted in ``Exchange.dropped``), so a server that floods
# a call costs the recorder a bounded amount of memory whatever it sends (docs/record.md).
MAX_EVENTS = 1000
MAX_EVENT_BYTES = 4 * 1024 * 1024


def _id_key(rid: Any) -> str:
    return json.dumps(rid)


def _decode(line: bytes) -> Any:
    """A line as JSON, through the limits every decoded message keeps (``jsonrpc.parse``: nesting,
    numbers, UTF-8), so a recorded value can be redacted, built and emitted without surprise."""
    try:
        return jsonrpc.parse(line)
    except errors.ClientError:
        return _GARBAGE


_GARBAGE = object()


class Exchange:
    """One client request and what the server did about it, in order."""

    __slots__ = ("id", "method", "params", "t0", "events", "final", "round", "cancelled", "kept_bytes", "dropped")

    def __init__(self, rid: Any, method: str, params: dict[str, Any], t0: float, round: int) -> None:
        self.id = rid
        self.method = method
        self.params = params
        self.t0 = t0
        self.events: list[tuple[float, str, Any]] = []  # (time, progress|log|raw|request|answer, value)
        self.final: tuple[float, str, Any] | None = None  # (time, result|error, value)
        self.round = round
        self.cancelled = False
        self.kept_bytes = 0  # the size of the lines behind ``events`` (bounded by MAX_EVENT_BYTES)
        self.dropped = 0  # what the server sent during it past the bounds (passed on, not recorded)

    @property
    def recorded(self) -> bool:
        """Does the cassette give this exchange a rule (so keep what the server sends during it)?"""
        return self.method not in NOT_RECORDED and not self.method.startswith("notifications/")


class Recorder:
    """Pairs the lines of one session into exchanges (fed by the shell, in arrival order).

    Given the ``Redactor`` the cassette will be built with, it learns the secrets as the lines
    arrive (what ``build`` would otherwise walk every value for when the client has left, while
    the client waits: the Python client sends SIGTERM after 2 s)."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor
        self.exchanges: list[Exchange] = []
        self._open: dict[str, Exchange] = {}
        self._tokens: dict[str, Exchange] = {}
        self._server_requests: dict[str, Exchange] = {}
        self._state_rounds: dict[str, int] = {}
        self.stray = 0  # garbage lines with no request in flight (counted: no cassette holds them)
        # Did the server send "{{" (or any \u escape, which may spell it)? Steps render templates,
        # so only then must the built steps write it as a literal.
        self.braces = False
        # Did either side send a \u escape (the only way JSON text spells a lone surrogate)?
        self.escapes = False

    # ------------------------------------------------------------ what the client sent

    def client_line(self, line: bytes, t: float) -> None:
        if not self.escapes and b"\\u" in line:
            self.escapes = True
        msg = _decode(line)
        if type(msg) is not dict:
            return  # the client's own garbage: the server answers it, nothing to replay
        method = msg.get("method")
        rid = msg.get("id")
        if type(method) is str:
            params = msg.get("params")
            params = params if type(params) is dict else {}
            if rid is None:
                if method == p.CANCELLED:
                    ex = self._open.get(_id_key(params.get("requestId")))
                    if ex is not None:
                        ex.cancelled = True
                return
            state = params.get("requestState")
            round = 1
            if type(state) is str and state in self._state_rounds:
                round = self._state_rounds[state] + 1
            elif params.get("inputResponses"):
                round = 2
            ex = Exchange(rid, method, params, t, round)
            self.exchanges.append(ex)
            if self.redactor is not None and method not in NOT_RECORDED:
                self.redactor.learn(params)  # definitions aside (a schema's "password" property is no secret)
            self._open[_id_key(rid)] = ex
            meta = params.get("_meta")
            if type(meta) is dict and meta.get(p.META_PROGRESS_TOKEN) is not None:
                self._tokens[_id_key(meta[p.META_PROGRESS_TOKEN])] = ex
            return
        if rid is not None and ("result" in msg or "error" in msg):
            ex = self._server_requests.pop(_id_key(rid), None)
            if ex is not None:
                ex.events.append((t, "answer", msg))
                self._learn(ex, msg)

    # ------------------------------------------------------------ what the server sent

    def server_line(self, line: bytes, t: float) -> None:
        if not self.braces and (b"{{" in line or b"\\u" in line):
            self.braces = True
        if not self.escapes and b"\\u" in line:
            self.escapes = True
        msg = _decode(line)
        if type(msg) is not dict:
            ex = self._current()
            if ex is None:
                self.stray += 1
            elif self._keep(ex, len(line)):
                # byte for byte: a rawBytes step holds one byte per character
                ex.events.append((t, "raw", line.rstrip(b"\r\n")[:MAX_RAW].decode("latin-1")))
            return
        method = msg.get("method")
        rid = msg.get("id")
        if type(method) is not str:
            if rid is not None and ("result" in msg or "error" in msg):
                ex = self._open.pop(_id_key(rid), None)
                if ex is None:
                    return
                if "error" in msg:
                    ex.final = (t, "error", msg["error"])
                else:
                    result = msg["result"]
                    ex.final = (t, "result", result)
                    if type(result) is dict and type(result.get("requestState")) is str:
                        self._state_rounds[result["requestState"]] = ex.round
                self._learn(ex, ex.final[2])
            return
        params = msg.get("params")
        params = params if type(params) is dict else {}
        if rid is not None:  # a server-to-client request (legacy era): part of the request in flight
            ex = self._current(latest=True)
            if ex is not None and method != "ping" and self._keep(ex, len(line)):
                ex.events.append((t, "request", msg))
                self._learn(ex, msg)
                self._server_requests[_id_key(rid)] = ex
            return
        if method == p.PROGRESS:
            ex = self._tokens.get(_id_key(params.get("progressToken")))
            if ex is None or ex.final is not None:
                return
            spec = {k: params[k] for k in ("progress", "total") if params.get(k) is not None}
            if type(params.get("message")) is str:  # (a progress step's message is text)
                spec["message"] = params["message"]
            if type(spec.get("progress")) in (int, float) and type(spec.get("total", 0)) in (int, float) \
                    and self._keep(ex, len(line)):
                ex.events.append((t, "progress", spec))
                self._learn(ex, spec)
        elif method == p.MESSAGE:
            ex = self._current(latest=True)
            level = params.get("level")
            if ex is not None and type(level) is str and level in LOG_LEVELS and "data" in params \
                    and self._keep(ex, len(line)):
                spec = {"level": params["level"], "data": params["data"]}
                if type(params.get("logger")) is str:
                    spec["logger"] = params["logger"]
                ex.events.append((t, "log", spec))
                self._learn(ex, spec)

    def _keep(self, ex: Exchange, size: int) -> bool:
        """Keep one more thing the server sent during ``ex``? Only what its rule will hold, within the bounds."""
        if not ex.recorded:
            return False
        if len(ex.events) >= MAX_EVENTS or ex.kept_bytes + size > MAX_EVENT_BYTES:
            ex.dropped += 1
            return False
        ex.kept_bytes += size
        return True

    def overflowed(self) -> list[Exchange]:
        """The exchanges that got more from the server than the bounds keep (their rules hold the first part)."""
        return [ex for ex in self.exchanges if ex.dropped]

    def _learn(self, ex: Exchange, value: Any) -> None:
        if self.redactor is not None and ex.method not in NOT_RECORDED:
            self.redactor.learn(value)

    @property
    def in_flight(self) -> int:
        """Requests not answered yet (subscription streams aside): what a disconnect would cut off."""
        return sum(1 for ex in self._open.values() if ex.method != p.SUBSCRIPTIONS_LISTEN and not ex.cancelled)

    def _current(self, latest: bool = False) -> Exchange | None:
        """The request in flight that an unattributed line belongs to (subscription streams aside)."""
        found = None
        for ex in self._open.values():
            if ex.method == p.SUBSCRIPTIONS_LISTEN:
                continue
            found = ex
            if not latest:
                break
        return found


# ---------------------------------------------------------------- building the scenario


__all__ = ["Exchange", "LOG_LEVELS", "MAX_EVENTS", "MAX_EVENT_BYTES", "MAX_RAW", "NOT_RECORDED", "Recorder"]
