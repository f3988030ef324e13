"""``waitFor``: waits parked until a matching request is read, and the near miss of one that timed out.

The core keeps the waits and wakes them as requests are read (``Waits.wake``, from the
inbound observer); the shell keeps the clock and parks the control client until the
waiter's ``on_done`` is called or its deadline passes (``Waits.timed_out``: the error
names the request read meanwhile that came closest, and why it did not match). Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Callable

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario import matching
from mockmcp.scenario.model import base as model
from mockmcp.core.context import RequestContext
from mockmcp.core.control.journal import Journal
from mockmcp.core.control.params import TimedOut

NEAR_MISS_SCAN = 1_000  # requests a timed-out wait compares with its `when`, newest first


class WaitSpec:
    """What ``waitFor`` waits for: a method, a name or uri, and a ``when`` without targeting."""

    __slots__ = ("method", "name", "uri", "when")

    def __init__(self, method: str | None, name: str | None, uri: str | None, when: model.Match) -> None:
        self.method = method
        self.name = name
        self.uri = uri
        self.when = when

    def reasons(self, msg: dict[str, Any], state: str) -> list[str]:
        """Why the client message ``msg`` is not what is awaited (empty: it is)."""
        method = msg.get("method")
        raw = msg.get("params")
        params: dict[str, Any] = raw if type(raw) is dict else {}
        out = []
        if self.method is not None and method != self.method:
            out.append(f"method is {method!r}, waiting for {self.method!r}")
        if self.name is not None and params.get("name") != self.name:
            out.append(f"name is {params.get('name')!r}, waiting for {self.name!r}")
        if self.uri is not None and params.get("uri") != self.uri:
            out.append(f"uri is {params.get('uri')!r}, waiting for {self.uri!r}")
        meta = params.get("_meta")
        req = jsonrpc.Request(msg.get("id"), method if type(method) is str else "", params, msg)
        out += matching.mismatches(self.when, RequestContext(req, meta if type(meta) is dict else {}, state).scope())
        return out


class Waiter:
    """A parked ``waitFor``: the shell sets ``on_done`` and waits; the core calls it on a match."""

    __slots__ = ("request_id", "spec", "start", "timeout", "found", "on_done")

    def __init__(self, request_id: Any, spec: WaitSpec, start: int, timeout: float) -> None:
        self.request_id = request_id
        self.spec = spec
        self.start = start  # the journal position from which requests count
        self.timeout = timeout  # seconds (the shell keeps the clock)
        self.found: tuple[int, dict[str, Any]] | None = None
        self.on_done: Callable[[], None] | None = None


class Waits:
    """The waits parked on one journal."""

    __slots__ = ("journal", "pending")

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.pending: list[Waiter] = []

    def found_earlier(self, waiter: Waiter, state: str) -> bool:
        """Does a request already journalled from ``waiter.start`` on satisfy it? (then ``found`` is set)"""
        for pos, record in self.journal.requests_since(waiter.start):
            if not waiter.spec.reasons(record, state):
                waiter.found = (pos, record)
                return True
        return False

    def park(self, waiter: Waiter) -> None:
        self.pending.append(waiter)

    def wake(self, pos: int, message: dict[str, Any], state: str) -> None:
        """The client message at ``pos`` was read: every wait it satisfies is done."""
        for waiter in list(self.pending):
            if not waiter.spec.reasons(message, state):
                self.pending.remove(waiter)
                waiter.found = (pos, message)
                if waiter.on_done is not None:
                    waiter.on_done()

    def forget(self, waiter: Waiter) -> None:
        """The control client went away, or the wait timed out."""
        if waiter in self.pending:
            self.pending.remove(waiter)

    @staticmethod
    def response(waiter: Waiter) -> dict[str, Any]:
        """The response of a wait that ``on_done`` reported satisfied."""
        assert waiter.found is not None, "wait_response before the wait was satisfied"
        pos, message = waiter.found
        return jsonrpc.result_response(waiter.request_id, {"position": pos, "message": message})

    def timed_out(self, waiter: Waiter, state: str) -> dict[str, Any]:
        """The shell's deadline passed: forget the wait; the error names the closest request."""
        if waiter.found is not None:  # satisfied in the same instant: the match wins
            return self.response(waiter)
        self.forget(waiter)
        miss = self.near_miss(waiter, state)
        text = f"no matching request in {waiter.timeout:g} s"
        if miss is not None:
            text += f"; the closest was #{miss['position']} {miss['method']}: {'; '.join(miss['reasons'])}"
        else:
            text += "; no request arrived meanwhile"
        exc = TimedOut(text, data={"nearMiss": miss}, request_id=waiter.request_id)
        return errors.error_response(exc.request_id, exc.code, exc.message, exc.data)

    def near_miss(self, waiter: Waiter, state: str) -> dict[str, Any] | None:
        """The request read since the wait began whose mismatches are fewest (ties: the earliest)."""
        best: dict[str, Any] | None = None
        scanned = 0
        for pos, direction, record, _ in reversed(self.journal.records):
            if pos < waiter.start or scanned >= NEAR_MISS_SCAN:
                break
            if direction != "in" or "method" not in record:
                continue
            scanned += 1
            reasons = waiter.spec.reasons(record, state)
            if best is None or len(reasons) <= len(best["reasons"]):  # ties: the earliest
                best = {"position": pos, "method": record.get("method"), "id": record.get("id"), "reasons": reasons}
        return best
