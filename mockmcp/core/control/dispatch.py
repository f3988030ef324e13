"""The control channel's dispatch: one control line in, one ``Outcome`` out, and the channel's own operations.

``Control.handle_line`` decodes a line, finds its operation in one table (the channel's own:
``ping``, ``pause``, ``resume``, ``journal``, ``waitFor``, ``shutdown``; the scenario's, in
``scenario_ops``; the tasks', in ``task_ops``; authorization's, in ``auth_ops``) and turns every ``ClientError`` into its error
response, this protocol's one boundary: a control mistake never reaches the MCP stream.
``Control`` is also what the shell hooks to the MCP traffic (``inbound``, ``outbound``: the
journal, and the waits a request satisfies) and asks about a parked wait (``wait_response``,
``timed_out``, ``forget``). Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Callable

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire.framing import Oversized
from mockmcp.scenario.problems import did_you_mean
from mockmcp.core.control.auth_ops import AuthOps
from mockmcp.core.control.journal import JOURNAL_RECORDS, MAX_JOURNAL_PAGE, Journal
from mockmcp.core.control.outcome import Outcome, Pause, Resume, Shutdown
from mockmcp.core.control.params import MAX_WAIT_SECONDS, int_param, number_param, ok, str_param, when_param
from mockmcp.core.control.scenario_ops import ScenarioOps
from mockmcp.core.control.surface import AuthSurface, ControlledEngine, Fragments
from mockmcp.core.control.task_ops import Op, TaskOps
from mockmcp.core.control.waits import Waiter, Waits, WaitSpec

TARGETING = ("nth", "every", "first", "after", "probability")  # what a wait's `when` may not have


class Control:
    """Serves control requests against one engine; also the recent-traffic journal and waits."""

    def __init__(self, engine: ControlledEngine, fragments: Fragments, *, journal_records: int = JOURNAL_RECORDS,
                 auth: AuthSurface | None = None) -> None:
        self.engine = engine
        self.fragments = fragments
        self.journal = Journal(journal_records)
        self.waits = Waits(self.journal)
        # The shell's output observer: record a line written to stdout (decoded only when read).
        # The journal's own method, not one that calls it: it runs for every line the mock writes.
        self.outbound: Callable[[bytes], None] = self.journal.outbound
        tasks = TaskOps(engine, fragments)
        self._ops: dict[str, Op] = {
            "ping": self._ping,
            **ScenarioOps(engine, fragments, tasks, auth).operations(),
            "pause": self._pause,
            "resume": self._resume,
            "journal": self._journal,
            "waitFor": self._wait_for,
            "shutdown": self._shutdown,
            **tasks.operations(),
            **AuthOps(auth).operations(),
        }

    # ------------------------------------------------------------ the boundary

    def handle_line(self, line: bytes | Oversized) -> Outcome:
        """One control line -> its outcome; every ``ClientError`` becomes its error response here."""
        rid: Any = None
        try:
            if isinstance(line, Oversized):
                raise errors.InvalidRequest(f"Invalid Request: a control line of {line.length} bytes is over the limit")
            msg = jsonrpc.decode(line)
            if not isinstance(msg, jsonrpc.Request):
                raise errors.InvalidRequest('Invalid Request: a control request needs an "id" and a "method"')
            rid = msg.id
            op = self._ops.get(msg.method)
            if op is None:
                hint = did_you_mean(msg.method, self._ops)
                raise errors.MethodNotFound(
                    f"Unknown operation {msg.method!r}{hint} (known: {', '.join(self._ops)})", request_id=rid
                )
            result = op(rid, msg.params)
            return result if isinstance(result, Outcome) else Outcome(result)
        except errors.ClientError as exc:
            return Outcome(errors.error_response(exc.request_id if exc.has_id else rid, exc.code, exc.message, exc.data))

    # ------------------------------------------------------------ observers (the shell hooks them)

    def inbound(self, line: bytes | Oversized, msg: jsonrpc.Message | None, exc: errors.ClientError | None) -> None:
        """The connection's inbound observer: record the message and wake the waits it satisfies
        (``outbound``, set in the constructor, is the one for what the shell writes)."""
        pos = self.journal.inbound(line, msg, exc)
        if self.waits.pending and isinstance(msg, jsonrpc.Request | jsonrpc.Notification):
            self.waits.wake(pos, msg.message, self.engine.session.state)

    # ------------------------------------------------------------ waits

    def wait_response(self, waiter: Waiter) -> dict[str, Any]:
        """The response of a wait that ``on_done`` reported satisfied."""
        return self.waits.response(waiter)

    def timed_out(self, waiter: Waiter) -> dict[str, Any]:
        """The shell's deadline passed: forget the wait; the error names the closest request."""
        return self.waits.timed_out(waiter, self.engine.session.state)

    def forget(self, waiter: Waiter) -> None:
        """The control client went away, or the wait timed out."""
        self.waits.forget(waiter)

    # ------------------------------------------------------------ the channel's own operations

    def _ping(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return ok(rid, {"position": self.journal.position})

    def _pause(self, rid: Any, params: dict[str, Any]) -> Outcome:
        seconds = number_param(params, "seconds", rid)
        if seconds is not None and not 0 <= seconds <= MAX_WAIT_SECONDS:
            raise errors.InvalidParams(f"Invalid params: seconds must be between 0 and {MAX_WAIT_SECONDS:g}", request_id=rid)
        return Outcome(ok(rid, {}), effect=Pause(seconds))

    def _resume(self, rid: Any, params: dict[str, Any]) -> Outcome:
        return Outcome(ok(rid, {}), effect=Resume())

    def _journal(self, rid: Any, params: dict[str, Any]) -> Outcome:
        """The records from ``since``, answered as one line built from the lines kept (``Journal.page``)."""
        since = int_param(params, "since", rid, default=0, minimum=0)  # (a position; below 0 would count drops)
        limit = min(max(int_param(params, "limit", rid, default=MAX_JOURNAL_PAGE), 1), MAX_JOURNAL_PAGE)
        return Outcome(None, encoded=self.journal.page(rid, since, limit))

    def _wait_for(self, rid: Any, params: dict[str, Any]) -> Outcome:
        when, method, name, uri = when_param(params, rid, method_required=False)
        for key in TARGETING:
            if key in when:
                raise errors.InvalidParams(f"Invalid params: waitFor takes no targeting (when.{key})", request_id=rid)
        timeout = number_param(params, "timeout", rid)
        if timeout is None or not 0 <= timeout <= MAX_WAIT_SECONDS:
            raise errors.InvalidParams(
                f"Invalid params: timeout (seconds) is required, between 0 and {MAX_WAIT_SECONDS:g}", request_id=rid
            )
        rule = self.fragments.rule(
            self.engine.scenario, method or "tools/call", when, None, at_when=("params", "when"), at_steps=(), request_id=rid, what="wait"
        )
        spec = WaitSpec(method, name, uri, rule.when)
        since = params.get("since")
        start = self.journal.position if since is None else int_param(params, "since", rid, minimum=0)
        waiter = Waiter(rid, spec, start, timeout)
        if since is not None and self.waits.found_earlier(waiter, self.engine.session.state):
            return Outcome(self.waits.response(waiter))
        self.waits.park(waiter)
        return Outcome(None, waiter=waiter)

    def _shutdown(self, rid: Any, params: dict[str, Any]) -> Outcome:
        mode = str_param(params, "mode", rid, required=False) or "graceful"
        if mode not in ("graceful", "crash"):
            raise errors.InvalidParams(f"Invalid params: mode is 'graceful' or 'crash', not {mode!r}", request_id=rid)
        status = int_param(params, "status", rid, default=0 if mode == "graceful" else 1)
        if not 0 <= status <= 255:
            raise errors.InvalidParams("Invalid params: status is 0 to 255", request_id=rid)
        return Outcome(ok(rid, {"mode": mode, "status": status}), effect=Shutdown(mode == "crash", status))
