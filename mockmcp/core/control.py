"""The live control channel's core: one control line in, one response (and effects) out.

A test drives the running mock over a Unix socket (``controlshell``) with
JSON-RPC 2.0 requests, one per line: emit an event now, add/replace/remove a
tool, prompt, resource or template, read and set named state, read rule
counters, arm one-shot replies, pause and resume stdin, read the recent
traffic, wait for a request, shut down. This module knows all of it and does
no I/O: ``Control.handle_line`` returns an ``Outcome`` (the response, the MCP
lines to write first, and an effect only the shell can perform: pause,
resume, shutdown, or a wait to park). The engine is reached through a narrow
surface (its session, services, ``fan_out`` and ``replace_scenario``).

The error model is the MCP side's: every mistake of a control client is a
``ClientError`` raised where it is found and turned into its response by
``errors.error_response`` in ``handle_line``, this protocol's one boundary. A
control mistake never reaches the MCP stream. Definitions and armed replies
are checked exactly like a scenario file (the handed-in ``Fragments``, the
loader's structure and check path), with problems located by JSON path inside
the control request.
"""

from __future__ import annotations

import collections
import itertools
import json

import attrs
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario import matching
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p
from mockmcp.core import tasks
from mockmcp.scenario import templates
from mockmcp.core.actions import Emit, Send
from mockmcp.core.armed import Armed
from mockmcp.core.context import RequestContext
from mockmcp.wire.framing import Oversized
from mockmcp.scenario.problems import did_you_mean

if TYPE_CHECKING:
    from mockmcp.scenario.model.tasks import TaskSpec

Path_ = tuple[Any, ...]

# Error codes of the control protocol beyond JSON-RPC's own (its range for implementations).
NOT_FOUND = -32004  # the tool, prompt, resource, template or armed reply named does not exist
TIMED_OUT = -32008  # waitFor: no matching request in time (data.nearMiss: the closest one)

JOURNAL_RECORDS = 10_000  # recent MCP messages kept for `journal` and `waitFor` (the oldest go first)
MAX_JOURNAL_PAGE = 1_000  # records one `journal` answer carries at most
MAX_JOURNAL_CHARS = 16 * 1024 * 1024  # and its records' text at most (past it: the rest on the next page)
MAX_WAIT_SECONDS = 3_600.0
NEAR_MISS_SCAN = 1_000  # requests a timed-out wait compares with its `when`, newest first

KIND_EVENT = {"tool": "tools/list_changed", "prompt": "prompts/list_changed", "resource": "resources/list_changed", "template": "resources/list_changed"}
KIND_FIELD = {"tool": ("tools", "name"), "prompt": ("prompts", "name"), "resource": ("resources", "uri"), "template": ("resourceTemplates", "uriTemplate")}
TARGETING = ("nth", "every", "first", "after", "probability")
TASK_STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
MAX_TASK_LIST = 1_000  # tasks one `listTasks` answer names at most (the newest)


class NotFound(errors.ClientError):
    code = NOT_FOUND


class TimedOut(errors.ClientError):
    code = TIMED_OUT


class Fragments(Protocol):
    """The loader's checks for run-time fragments (``mockmcp.scenario.fragments``), handed in by the shell."""

    def primitive(
        self, scenario: model.Scenario, kind: str, definition: Any, *, replace: bool, at: Path_, request_id: Any
    ) -> tuple[model.Scenario, list[str]]: ...

    def rule(
        self,
        scenario: model.Scenario,
        method: str,
        when: Any,
        steps: Any,
        *,
        at_when: Path_,
        at_steps: Path_,
        request_id: Any,
        what: str = ...,
    ) -> model.Rule: ...

    def task_change(self, phase: dict[str, Any] | None, outcome: dict[str, Any] | None, *, request_id: Any) -> TaskSpec: ...


# ---------------------------------------------------------------- outcomes


class Pause:
    """Stop reading stdin (for ``seconds``, or until a resume when ``None``)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds


class Resume:
    """Read stdin again."""

    __slots__ = ()


class Shutdown:
    """End the mock: gracefully (as at EOF of stdin), or at once with ``status`` (a crash)."""

    __slots__ = ("crash", "status")

    def __init__(self, crash: bool, status: int) -> None:
        self.crash = crash
        self.status = status


Effect = Pause | Resume | Shutdown


class Outcome:
    """What one control line asks of the shell: write ``sends`` to stdout, perform ``effect``,
    then write the response back to the control client (none: park on ``waiter`` first).

    The response is a dict, or (``encoded``) its line already built, as ``journal`` builds
    it from the lines it keeps (decoded here only if someone reads ``response``)."""

    __slots__ = ("_response", "encoded", "sends", "effect", "waiter")

    def __init__(
        self,
        response: dict[str, Any] | None,
        sends: list[Send] | None = None,
        effect: Effect | None = None,
        waiter: Waiter | None = None,
        encoded: bytes | None = None,
    ) -> None:
        self._response = response
        self.encoded = encoded
        self.sends = sends or []
        self.effect = effect
        self.waiter = waiter

    @property
    def response(self) -> dict[str, Any] | None:
        if self._response is None and self.encoded is not None:
            self._response = json.loads(self.encoded)
        return self._response

    def line(self) -> bytes | None:
        """The response line to write (``None``: nothing to write now)."""
        if self.encoded is not None:
            return self.encoded
        return None if self._response is None else jsonrpc.encode(self._response)

    def answered(self) -> None:
        """The shell wrote the response ahead of the effect (a shutdown): nothing more to write."""
        self._response = self.encoded = None


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


# ---------------------------------------------------------------- the core


class Control:
    """Serves control requests against one engine; also the recent-traffic journal and waits."""

    def __init__(self, engine: Any, fragments: Fragments, *, journal_records: int = JOURNAL_RECORDS) -> None:
        self.engine = engine
        self.fragments = fragments
        # (position, "in" | "out", a decoded message read (or what was wrong with the line) or None
        # for a line written, the JSON text of the line as read or written (None: not JSON))
        self._records: collections.deque[tuple[int, str, Any, bytes | None]] = collections.deque(maxlen=journal_records)
        self._position = 0  # the position the next record gets
        self._waiters: list[Waiter] = []
        self._armed_ids = 0
        self._ops: dict[str, Callable[[Any, dict[str, Any]], Outcome | dict[str, Any]]] = {
            "ping": self._ping,
            "emit": self._emit,
            "add": self._add,
            "replace": self._replace,
            "remove": self._remove,
            "getState": self._get_state,
            "setState": self._set_state,
            "counters": self._counters,
            "arm": self._arm,
            "disarm": self._disarm,
            "pause": self._pause,
            "resume": self._resume,
            "journal": self._journal,
            "waitFor": self._wait_for,
            "shutdown": self._shutdown,
            "listTasks": self._list_tasks,
            "getTask": self._get_task,
            "setTask": self._set_task,
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
        """The connection's inbound observer: record the message and wake the waits it satisfies."""
        pos = self._position
        self._position = pos + 1
        raw: bytes | None = None
        if msg is not None:
            record = msg.message
            raw = line if isinstance(line, bytes) else None  # (its JSON text, for the journal)
        elif isinstance(line, Oversized):
            record = {"oversized": line.length}
        else:
            record = {"raw": line.rstrip(b"\r\n").decode("utf-8", "replace"), "error": exc.message if exc else None}
        self._records.append((pos, "in", record, raw))
        if self._waiters and isinstance(msg, jsonrpc.Request | jsonrpc.Notification):
            state = self.engine.session.state
            for waiter in list(self._waiters):
                if not waiter.spec.reasons(msg.message, state):
                    self._waiters.remove(waiter)
                    waiter.found = (pos, msg.message)
                    if waiter.on_done is not None:
                        waiter.on_done()

    def outbound(self, data: bytes) -> None:
        """The shell's output observer: record a line written to stdout (decoded only when read)."""
        pos = self._position
        self._position = pos + 1
        self._records.append((pos, "out", None, data))

    # ------------------------------------------------------------ waits

    def wait_response(self, waiter: Waiter) -> dict[str, Any]:
        """The response of a wait that ``on_done`` reported satisfied."""
        assert waiter.found is not None, "wait_response before the wait was satisfied"
        pos, message = waiter.found
        return jsonrpc.result_response(waiter.request_id, {"position": pos, "message": message})

    def timed_out(self, waiter: Waiter) -> dict[str, Any]:
        """The shell's deadline passed: forget the wait; the error names the closest request."""
        if waiter.found is not None:  # satisfied in the same instant: the match wins
            return self.wait_response(waiter)
        self.forget(waiter)
        miss = self._near_miss(waiter)
        text = f"no matching request in {waiter.timeout:g} s"
        if miss is not None:
            text += f"; the closest was #{miss['position']} {miss['method']}: {'; '.join(miss['reasons'])}"
        else:
            text += "; no request arrived meanwhile"
        exc = TimedOut(text, data={"nearMiss": miss}, request_id=waiter.request_id)
        return errors.error_response(exc.request_id, exc.code, exc.message, exc.data)

    def forget(self, waiter: Waiter) -> None:
        """The control client went away, or the wait timed out."""
        if waiter in self._waiters:
            self._waiters.remove(waiter)

    def _near_miss(self, waiter: Waiter) -> dict[str, Any] | None:
        best: dict[str, Any] | None = None
        state = self.engine.session.state
        scanned = 0
        for pos, direction, record, _ in reversed(self._records):
            if pos < waiter.start or scanned >= NEAR_MISS_SCAN:
                break
            if direction != "in" or "method" not in record:
                continue
            scanned += 1
            reasons = waiter.spec.reasons(record, state)
            if best is None or len(reasons) <= len(best["reasons"]):  # ties: the earliest
                best = {"position": pos, "method": record.get("method"), "id": record.get("id"), "reasons": reasons}
        return best

    # ------------------------------------------------------------ operations

    def _ping(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return _ok(rid, {"position": self._position})

    def _emit(self, rid: Any, params: dict[str, Any]) -> Outcome:
        event = _str(params, "event", rid)
        if event == "log":
            sends = self._log_sends(params, rid)
        elif event == "tasks":
            rec = self._task(params, rid)
            sends = self.engine.tasks.announce(rec, self._live)
        elif event in p.EVENT_METHOD:
            uri = _str(params, "uri", rid, required=event == "resources/updated")
            sends = self.engine.fan_out(Emit(event, uri))
        else:
            known = [*p.EVENT_METHOD, "log", "tasks"]
            raise errors.InvalidParams(
                f"Invalid params: unknown event {event!r}{did_you_mean(event, known)} (known: {', '.join(known)})",
                request_id=rid,
            )
        return Outcome(_ok(rid, {"delivered": len(sends)}), sends)

    def _log_sends(self, params: dict[str, Any], rid: Any) -> list[Send]:
        """A log message on every open stream whose listen request asked for that level or below."""
        level = _str(params, "level", rid, required=False) or "info"
        if level not in p.LOG_LEVEL_RANK:
            raise errors.InvalidParams(f"Invalid params: level must be one of {', '.join(p.LOG_LEVELS)}", request_id=rid)
        logger = _str(params, "logger", rid, required=False)
        if "data" not in params:
            raise errors.InvalidParams("Invalid params: a log event needs 'data'", request_id=rid)
        rank = p.LOG_LEVEL_RANK[level]
        out = []
        for sid, sub in self.engine.session.subscriptions.items():
            wanted = sub.log_level
            if wanted is None or wanted not in p.LOG_LEVEL_RANK or p.LOG_LEVEL_RANK[wanted] > rank:
                continue
            body: dict[str, Any] = {"_meta": {p.META_SUBSCRIPTION_ID: sid}, "level": level, "data": params["data"]}
            if logger is not None:
                body["logger"] = logger
            out.append(self.engine.envelope.notification(p.MESSAGE, body))
        return out

    def _kind(self, params: dict[str, Any], rid: Any) -> str:
        kind = _str(params, "kind", rid)
        if kind not in KIND_FIELD:
            raise errors.InvalidParams(
                f"Invalid params: kind must be one of {', '.join(KIND_FIELD)}, not {kind!r}{did_you_mean(kind, KIND_FIELD)}",
                request_id=rid,
            )
        return str(kind)

    def _changed(self, rid: Any, params: dict[str, Any], kind: str, scenario: model.Scenario, result: dict[str, Any]) -> Outcome:
        self.engine.replace_scenario(scenario)
        sends: list[Send] = []
        if _bool(params, "notify", rid, default=True):
            sends = self.engine.fan_out(Emit(KIND_EVENT[kind], None))
        result["delivered"] = len(sends)
        return Outcome(_ok(rid, result), sends)

    def _keys(self, kind: str) -> list[str]:
        field, key = KIND_FIELD[kind]
        return [str(getattr(x, key)) for x in getattr(self.engine.scenario, field)]

    def _define(self, rid: Any, params: dict[str, Any], replace: bool) -> Outcome:
        kind = self._kind(params, rid)
        if "definition" not in params:
            raise errors.InvalidParams("Invalid params: missing 'definition'", request_id=rid)
        definition = params["definition"]
        key_field = KIND_FIELD[kind][1]
        key = definition.get(key_field) if type(definition) is dict else None
        if replace and type(key) is str and key not in self._keys(kind):
            raise self._missing(kind, key, rid)
        scenario, warnings = self.fragments.primitive(
            self.engine.scenario, kind, definition, replace=replace and type(key) is str, at=("params", "definition"), request_id=rid
        )
        return self._changed(rid, params, kind, scenario, {"kind": kind, "key": key, "warnings": warnings})

    def _add(self, rid: Any, params: dict[str, Any]) -> Outcome:
        return self._define(rid, params, replace=False)

    def _replace(self, rid: Any, params: dict[str, Any]) -> Outcome:
        return self._define(rid, params, replace=True)

    def _missing(self, kind: str, key: str, rid: Any) -> NotFound:
        keys = self._keys(kind)
        return NotFound(
            f"no {kind} {key!r}{did_you_mean(key, keys)} (defined: {', '.join(map(repr, keys)) or 'none'})",
            data={"kind": kind, "key": key},
            request_id=rid,
        )

    def _remove(self, rid: Any, params: dict[str, Any]) -> Outcome:
        kind = self._kind(params, rid)
        key = _str(params, "key", rid)
        field, key_field = KIND_FIELD[kind]
        items = getattr(self.engine.scenario, field)
        kept = [x for x in items if getattr(x, key_field) != key]
        if len(kept) == len(items):
            raise self._missing(kind, key, rid)

        changes: dict[str, Any] = {field: kept}
        return self._changed(rid, params, kind, attrs.evolve(self.engine.scenario, **changes), {"kind": kind, "key": key})

    def _get_state(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return _ok(rid, {"state": self.engine.session.state})

    def _set_state(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        state = _str(params, "state", rid)
        declared = self.engine.scenario.state.states
        if declared is not None and state not in declared:
            raise errors.InvalidParams(
                f"Invalid params: unknown state {state!r}{did_you_mean(state, declared)} (declared: {', '.join(declared)})",
                request_id=rid,
            )
        session = self.engine.session
        previous = session.state
        session.set_state(state)
        return _ok(rid, {"state": state, "previous": previous})

    def _counters(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        svc = self.engine.services
        rules = [{"rule": svc.rule_label(rule), "matched": count} for rule, count in self.engine.session.match_counts()]
        armed = [a.describe() for a in self.engine.session.armed]
        return _ok(rid, {"requests": self.engine.session.requests_seen, "rules": rules, "armed": armed})

    def _when(self, params: dict[str, Any], rid: Any, *, method_required: bool) -> tuple[dict[str, Any], str | None, str | None, str | None]:
        when = params.get("when")
        if type(when) is not dict:
            raise errors.InvalidParams("Invalid params: 'when' must be an object (with at least 'method')", request_id=rid)
        rest = dict(when)
        found: dict[str, str | None] = {}
        for key in ("method", "name", "uri"):
            value = rest.pop(key, None)
            if value is not None and type(value) is not str:
                raise errors.InvalidParams(f"Invalid params: when.{key} must be a string", request_id=rid)
            found[key] = value
        if method_required and found["method"] is None:
            raise errors.InvalidParams("Invalid params: missing when.method", request_id=rid)
        return rest, found["method"], found["name"], found["uri"]

    def _arm(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        when, method, name, uri = self._when(params, rid, method_required=True)
        assert method is not None
        times = _int(params, "times", rid, default=1)
        if times < 1:
            raise errors.InvalidParams("Invalid params: times must be at least 1", request_id=rid)
        if "steps" not in params:
            raise errors.InvalidParams("Invalid params: missing 'steps' (the reply, as in a scenario rule)", request_id=rid)
        rule = self.fragments.rule(
            self.engine.scenario, method, when, params["steps"], at_when=("params", "when"), at_steps=("params", "steps"), request_id=rid
        )
        self._armed_ids += 1

        named = attrs.evolve(rule, name=f"armed#{self._armed_ids}")
        entry = Armed(self._armed_ids, method, name, uri, named, times)
        self.engine.session.armed.append(entry)
        return _ok(rid, entry.describe())

    def _disarm(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        armed = self.engine.session.armed
        if "id" not in params:
            n = len(armed)
            armed.clear()
            return _ok(rid, {"disarmed": n})
        which = _int(params, "id", rid)
        for entry in armed:
            if entry.id == which:
                armed.remove(entry)
                return _ok(rid, {"disarmed": 1})
        raise NotFound(f"no armed reply with id {which} (armed: {[a.id for a in armed] or 'none'})", request_id=rid)

    def _pause(self, rid: Any, params: dict[str, Any]) -> Outcome:
        seconds = _number(params, "seconds", rid)
        if seconds is not None and not 0 <= seconds <= MAX_WAIT_SECONDS:
            raise errors.InvalidParams(f"Invalid params: seconds must be between 0 and {MAX_WAIT_SECONDS:g}", request_id=rid)
        return Outcome(_ok(rid, {}), effect=Pause(seconds))

    def _resume(self, rid: Any, params: dict[str, Any]) -> Outcome:
        return Outcome(_ok(rid, {}), effect=Resume())

    def _journal(self, rid: Any, params: dict[str, Any]) -> Outcome:
        """The records from ``since``, answered as one line built from the lines kept.

        A record's message is spliced in as the JSON text it was read or written as
        (``_record_text``) rather than decoded and encoded again: that is most of what a
        ``journal`` costs, and it would be paid beside the MCP stream 1,000 times a second.
        ``tests/core/test_control_core.py`` compares the answer with the decoded records."""
        since = _int(params, "since", rid, default=0)
        limit = min(max(_int(params, "limit", rid, default=MAX_JOURNAL_PAGE), 1), MAX_JOURNAL_PAGE)
        oldest = self._records[0][0] if self._records else self._position
        parts: list[bytes] = []
        last = -1
        size = 0
        for rec in self._since(since):
            if len(parts) >= limit or size >= MAX_JOURNAL_CHARS:
                break  # (one record at least: a line is at most 4 MiB)
            text = _record_text(rec)
            parts.append(text)
            size += len(text)
            last = rec[0]
        nxt = last + 1 if parts else max(since, oldest)
        head = b'{"jsonrpc":"2.0","id":%b,"result":{"records":[' % jsonrpc.encode_text(rid).encode("utf-8", "surrogatepass")
        tail = b'],"next":%d,"dropped":%d}}\n' % (nxt, max(0, oldest - since))
        return Outcome(None, encoded=head + b",".join(parts) + tail)

    def _since(self, since: int) -> Iterator[tuple[int, str, Any, bytes | None]]:
        records = self._records
        if not records or since >= self._position:
            return iter(())
        return itertools.islice(records, max(0, since - records[0][0]), None)

    def _wait_for(self, rid: Any, params: dict[str, Any]) -> Outcome:
        when, method, name, uri = self._when(params, rid, method_required=False)
        for key in TARGETING:
            if key in when:
                raise errors.InvalidParams(f"Invalid params: waitFor takes no targeting (when.{key})", request_id=rid)
        timeout = _number(params, "timeout", rid)
        if timeout is None or not 0 <= timeout <= MAX_WAIT_SECONDS:
            raise errors.InvalidParams(
                f"Invalid params: timeout (seconds) is required, between 0 and {MAX_WAIT_SECONDS:g}", request_id=rid
            )
        rule = self.fragments.rule(
            self.engine.scenario, method or "tools/call", when, None, at_when=("params", "when"), at_steps=(), request_id=rid, what="wait"
        )
        spec = WaitSpec(method, name, uri, rule.when)
        since = params.get("since")
        start = self._position if since is None else _int(params, "since", rid)
        waiter = Waiter(rid, spec, start, timeout)
        if since is not None:
            state = self.engine.session.state
            for pos, direction, record, _ in self._since(start):
                if direction == "in" and "method" in record and not spec.reasons(record, state):
                    waiter.found = (pos, record)
                    return Outcome(self.wait_response(waiter))
        self._waiters.append(waiter)
        return Outcome(None, waiter=waiter)

    # ------------------------------------------------------------ tasks (the Tasks extension)

    def _live(self, subscription_id: Any) -> bool:
        return subscription_id in self.engine.session.subscriptions

    def _task(self, params: dict[str, Any], rid: Any) -> tasks.TaskRecord:
        """The task ``params.taskId`` names, brought up to date with its script (NotFound if none)."""
        table: tasks.TaskTable = self.engine.tasks
        task_id = _str(params, "taskId", rid)
        rec = table.stored(task_id, rid)
        if rec is None:
            known = table.known_ids()[-10:]
            raise NotFound(
                f"no task {task_id!r}{did_you_mean(task_id, known)} (newest: {', '.join(known) or 'none'})",
                data={"taskId": task_id},
                request_id=rid,
            )
        if table.expired(rec):
            raise NotFound(f"task {task_id!r} has expired (its ttlMs passed)", data={"taskId": task_id}, request_id=rid)
        table.advance(rec)  # (if its script moved it, the caller's notifications carry that too)
        return rec

    def _list_tasks(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        table = self.engine.tasks
        ids = table.known_ids()  # (archived ended tasks of a session included)
        out = []
        for tid in ids[-MAX_TASK_LIST:]:
            rec = table.peek(tid)  # (a corrupt record is left out)
            if rec is not None:
                out.append({"taskId": tid, "status": rec.status, "tool": rec.params.get("name")})
        return _ok(rid, {"tasks": out, "total": len(ids)})

    def _get_task(self, rid: Any, params: dict[str, Any]) -> Outcome:
        rec = self._task(params, rid)
        table = self.engine.tasks
        return Outcome(_ok(rid, {"task": table.detailed(rec)}), table.notifications(rec, self._live))

    def _set_task(self, rid: Any, params: dict[str, Any]) -> Outcome:
        """Drive a task: a new status with its payload, by the extension's rules unless ``force``."""
        rec = self._task(params, rid)
        table = self.engine.tasks
        status = _str(params, "status", rid)
        if status not in TASK_STATUSES:
            raise errors.InvalidParams(
                f"Invalid params: status must be one of {', '.join(TASK_STATUSES)}, not {status!r}{did_you_mean(status, TASK_STATUSES)}",
                request_id=rid,
            )
        force = _bool(params, "force", rid, default=False)
        notify = _bool(params, "notify", rid, default=True)
        if rec.status in tasks.TERMINAL and not force:
            raise errors.InvalidParams(
                f"Invalid params: task {rec.id} is {rec.status}, a terminal status, which never changes "
                "(force: true changes it anyway, as a deliberate fault)",
                data={"taskId": rec.id, "status": rec.status},
                request_id=rid,
            )
        payload = {"input_required": "inputRequests", "completed": "result", "failed": "error"}
        for key in ("inputRequests", "result", "error"):
            if key in params and payload.get(status) != key:
                raise errors.InvalidParams(f"Invalid params: {key!r} does not go with status {status}", request_id=rid)
        if status in ("input_required", "failed") and payload[status] not in params:
            raise errors.InvalidParams(f"Invalid params: status {status} needs {payload[status]!r}", request_id=rid)
        message = _str(params, "statusMessage", rid, required=False)
        interval = params.get("pollIntervalMs")
        phase: dict[str, Any] | None = None
        if status in ("working", "input_required"):
            phase = {"status": status, "inputRequests": params.get("inputRequests"), "pollIntervalMs": interval}
            phase = {k: v for k, v in phase.items() if v is not None}
        elif interval is not None:
            phase = {"status": "working", "pollIntervalMs": interval}  # (checked there; the status is the given one)
        outcome = None
        if status == "completed":
            outcome = {"result": params.get("result", {"content": []})}
        elif status == "failed":
            outcome = {"error": params["error"]}
        spec = self.fragments.task_change(phase, outcome, request_id=rid)
        requests = None
        if status == "input_required":
            requests = spec.phases[0].inputRequests or {}
            reused = [k for k in requests if k in rec.answers]
            if reused and not force:
                raise errors.InvalidParams(
                    f"Invalid params: input request key {reused[0]!r} was answered before: keys are unique over "
                    "a task's life (force: true asks again, as a deliberate fault)",
                    request_id=rid,
                )
            for key in reused:
                del rec.answers[key]
            requests = templates.render(requests, table.context(rec).scope())
        rendered = None
        if spec.outcome and table.render_outcome is not None:
            rendered = table.render_outcome(table.context(rec), spec.outcome)
        previous = rec.status
        table.drive(
            rec, status, message=message, outcome=rendered, input_requests=requests,
            poll_interval=spec.phases[0].pollIntervalMs if spec.phases else None,
        )
        sends: list[Send] = []
        if notify:
            sends = table.notifications(rec, self._live)
        else:  # the streams are not told of this version, now or later
            for sid in table.watchers.get(rec.id, {}):
                table.watchers[rec.id][sid] = tasks.seen_key(rec)
        return Outcome(_ok(rid, {"task": table.detailed(rec), "previous": previous, "delivered": len(sends)}), sends)

    def _shutdown(self, rid: Any, params: dict[str, Any]) -> Outcome:
        mode = _str(params, "mode", rid, required=False) or "graceful"
        if mode not in ("graceful", "crash"):
            raise errors.InvalidParams(f"Invalid params: mode is 'graceful' or 'crash', not {mode!r}", request_id=rid)
        status = _int(params, "status", rid, default=0 if mode == "graceful" else 1)
        if not 0 <= status <= 255:
            raise errors.InvalidParams("Invalid params: status is 0 to 255", request_id=rid)
        return Outcome(_ok(rid, {"mode": mode, "status": status}), effect=Shutdown(mode == "crash", status))


# ---------------------------------------------------------------- parameters


def _ok(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return jsonrpc.result_response(rid, result)


def _record_text(rec: tuple[int, str, Any, bytes | None]) -> bytes:
    """One journal record as JSON text (UTF-8): ``{position, dir, message}``, the message spliced
    in as the line's own JSON text (a line read that decoded, or one the shell wrote: the mock's
    own encoder's), or ``{position, dir, raw, error}`` / ``{..., oversized}`` for a line that was
    not. Built as bytes in one formatting step (the lines are bytes, and so is the answer); text
    that is not ASCII is passed through UTF-8 decoding with replacement, so it is valid UTF-8."""
    pos, direction, record, raw = rec
    if raw is not None:
        message = raw.strip(b" \t\r\n")
        if not message.isascii():
            message = message.decode("utf-8", "replace").encode("utf-8")
        return b'{"position":%d,"dir":"%b","message":%b}' % (pos, _DIRECTIONS[direction], message)
    return jsonrpc.encode_text({"position": pos, "dir": direction, **record}).encode("utf-8", "surrogatepass")


_DIRECTIONS = {"in": b"in", "out": b"out"}


def _str(params: dict[str, Any], key: str, rid: Any, *, required: bool = True) -> Any:
    value = params.get(key)
    if value is None:
        if required:
            raise errors.InvalidParams(f"Invalid params: missing {key!r}", request_id=rid)
        return None
    if type(value) is not str:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be a string", request_id=rid)
    return value


def _int(params: dict[str, Any], key: str, rid: Any, *, default: int | None = None) -> int:
    value = params.get(key)
    if value is None:
        if default is None:
            raise errors.InvalidParams(f"Invalid params: missing {key!r}", request_id=rid)
        return default
    if type(value) is not int:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be an integer", request_id=rid)
    return value


def _number(params: dict[str, Any], key: str, rid: Any) -> float | None:
    value = params.get(key)
    if value is None:
        return None
    if type(value) not in (int, float):
        raise errors.InvalidParams(f"Invalid params: {key!r} must be a number of seconds", request_id=rid)
    return float(value)


def _bool(params: dict[str, Any], key: str, rid: Any, *, default: bool) -> bool:
    value = params.get(key, default)
    if type(value) is not bool:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be true or false", request_id=rid)
    return value
