"""The Tasks extension on the engine's side: the task table and each task's scripted life.

A ``task:`` step answers ``tools/call`` with a handle; the task then walks its
``phases`` (``working``, ``input_required``) and ends with its ``outcome``
(``completed`` or ``failed``) or, when the client cancels and the scenario
honours it, ``cancelled``. What moves a task on is what the scenario says:
time (``after``, measured on the clock the shell hands in, scaled by
``--time-scale``), polls (``tasks/get`` answered in the phase), the scenario's
named state, or every input request answered by ``tasks/update``.

Nothing here runs on its own: a task is brought up to date (``advance``)
whenever someone looks at it, from the clock value and its counters, so a
task that nobody polls for an hour is exactly where the script says when it
is next polled, in this process or (with a session directory) in the next.
Each record is plain JSON (``TaskRecord.to_json``) for that reason; the
shell's store keeps them, the core never touches a file. Sans-I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import mrtr
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.core.actions import Action, Send, WaitTasks
from mockmcp.core.context import RequestContext
from mockmcp.core.envelope import Envelope

if TYPE_CHECKING:
    from mockmcp.scenario.model.catalog import Step
    from mockmcp.scenario.model.tasks import TaskPhase, TaskSpec

Clock = Callable[[], float]  # seconds (wall time in the shell: tasks outlive processes)

REQUIRED_CAPABILITY: dict[str, Any] = {"extensions": {p.TASKS_EXTENSION: {}}}
TERMINAL = frozenset({"completed", "failed", "cancelled"})
STATUSES = TERMINAL | {"working", "input_required"}
MAX_RECORDS = 100_000  # finished tasks beyond this are forgotten, oldest first (bounded memory and store)


def has_extension(meta: dict[str, Any]) -> bool:
    """Did this request declare the Tasks extension in its client capabilities?"""
    caps = meta.get(p.META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        return False
    ext = caps.get("extensions")
    return type(ext) is dict and type(ext.get(p.TASKS_EXTENSION)) is dict


def missing_extension(request_id: Any, what: str) -> errors.MissingClientCapability:
    return errors.MissingClientCapability(
        f"Missing required client capability: {what} needs the {p.TASKS_EXTENSION} extension",
        data={"requiredCapabilities": REQUIRED_CAPABILITY},
        request_id=request_id,
    )


def iso(t: float) -> str:
    """An ISO 8601 UTC timestamp (milliseconds) of a clock value."""
    import datetime  # (only tasks need it: a spawn without them skips its import)

    when = datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def seen_key(rec: TaskRecord) -> tuple[Any, ...]:
    """What tells one observable state of a task from another, for notifications.

    The version alone is not enough across processes: two processes may each
    bump it once from the same record, so the status and the time of the
    change go with it."""
    return (rec.version, rec.status, rec.updated, rec.phase, len(rec.answers))


class TaskRecord:
    """One task's state: plain values only, so it can be kept as JSON between processes."""

    __slots__ = (
        "id", "spec", "params", "meta", "created", "updated", "phase", "phase_start", "polls",
        "total_polls", "answers", "status", "message", "outcome", "version", "cancel_asked",
        "fault_step", "driven",
    )

    def __init__(self, id: str, spec: int, params: dict[str, Any], meta: dict[str, Any], now: float) -> None:
        self.id = id
        self.spec = spec  # index in scenario_facts(scenario)[0]
        self.params = params  # the tools/call params (name, arguments): the outcome's templates read them
        self.meta = meta
        self.created = now
        self.updated = now
        self.phase = 0
        self.phase_start = now
        self.polls = 0  # tasks/get answered in the current phase
        self.total_polls = 0
        self.answers: dict[str, Any] = {}  # every input response accepted, by key
        self.status = "working"
        self.message: str | None = None
        self.outcome: dict[str, Any] | None = None  # {"result": ...} or {"error": ...} once ended
        self.version = 0  # bumped on every observable change (notifications are sent per version)
        self.cancel_asked = False
        self.fault_step = 0  # how far a scripted fault has gone
        # Set once the control channel drove the task (``TaskTable.drive``): the script no longer
        # moves it; holds the input requests and poll interval the control channel gave.
        self.driven: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_json(cls, data: Any, task_id: str, specs: int) -> TaskRecord:
        """A record from its JSON (a session store's line); ``CorruptRecord`` if it does not fit."""
        if type(data) is not dict:
            raise CorruptRecord("not an object")
        missing = [name for name in cls.__slots__ if name not in data and name not in _LATER]
        if missing:
            raise CorruptRecord(f"no {', '.join(missing)}")
        for name, kinds in _FIELD_TYPES.items():
            value = data.get(name, _LATER.get(name))
            if type(value) not in kinds:
                raise CorruptRecord(f"{name!r} is {type(value).__name__}")
        driven = data.get("driven")
        if driven is not None and type(driven.get("inputRequests")) is not dict:
            raise CorruptRecord("'driven' has no inputRequests object")
        if data["id"] != task_id or not 0 <= data["spec"] < specs or data["phase"] < 0 or data["status"] not in STATUSES:
            raise CorruptRecord("its id, script, phase or status does not fit this scenario")
        rec = cls.__new__(cls)
        for name in cls.__slots__:
            setattr(rec, name, data[name] if name in data else _LATER[name])
        return rec


class CorruptRecord(ValueError):
    """A stored task record that does not fit (the session directory was edited, or written by
    another program): answered -32603 when the task is asked for, the record left as it is."""


_NUMBER = (int, float)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,), "spec": (int,), "params": (dict,), "meta": (dict,), "created": _NUMBER, "updated": _NUMBER,
    "phase": (int,), "phase_start": _NUMBER, "polls": (int,), "total_polls": (int,), "answers": (dict,),
    "status": (str,), "message": (str, type(None)), "outcome": (dict, type(None)), "version": (int,),
    "cancel_asked": (bool,), "fault_step": (int,), "driven": (dict, type(None)),
}
_LATER: dict[str, Any] = {"driven": None}  # fields added after the format's first version: their value in older records


class TaskTable:
    """The tasks of one session, and the rules of the extension that need their state.

    ``render_outcome`` is handed in by the engine (the step expander builds
    an outcome like any reply). ``store`` (the shell's, with ``--session``)
    is told of every change; without one the table lives as long as the
    process.
    """

    def __init__(self, specs: list[TaskSpec], envelope: Envelope, clock: Clock, time_scale: float, key: bytes) -> None:
        self.specs = specs
        self._index = {id(s): i for i, s in enumerate(self.specs)}
        self.envelope = envelope
        self.clock = clock
        self.time_scale = time_scale
        self._key = hashlib.sha256(b"mockmcp task ids\0" + key).digest()
        self.records: dict[str, TaskRecord] = {}
        # Records another process wrote, as the JSON text the session store read: parsed when
        # first looked at (a session of 10,000 ended tasks starts without parsing them).
        self.raw: dict[str, str] = {}
        # Where a record neither kept nor read as text is looked for last (the session store's
        # archive of ended tasks, read only when asked): the id -> its JSON text, or None.
        self.lookup: Callable[[str], str | None] | None = None
        self.archived_ids: Callable[[], list[str]] | None = None  # what ``lookup`` can find (a session's archive)
        self.dirty: dict[str, None] = {}  # ids changed since the store last took them
        self.forgotten: dict[str, None] = {}  # ids pruned (the store compacts them away)
        self.serial = 0
        self._texts: dict[str, tuple[int, str]] = {}  # task id -> (version, tasks/get result text)
        self.state: Callable[[], str] = lambda: "start"
        self.render_outcome: Callable[[RequestContext, list[Step]], dict[str, Any]] | None = None
        self.changed = False  # set on every change; the shell wakes the streams that watch tasks
        # task id -> {subscription id: the state last sent (seen_key)}: the streams listening for it
        self.watchers: dict[str, dict[Any, tuple[Any, ...] | None]] = {}

    # ------------------------------------------------------------ creating

    def new_id(self) -> str:
        """An unguessable id (HMAC of a serial under the shell's random key), UUID-shaped."""
        self.serial += 1
        h = hmac.new(self._key, str(self.serial).encode(), hashlib.sha256).hexdigest()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def create(self, ctx: RequestContext, spec: TaskSpec) -> TaskRecord:
        now = self.clock()
        params = {k: v for k, v in ctx.params.items() if k in ("name", "arguments")}
        index = self._index.get(id(spec))
        if index is None:  # a tool added while the mock runs (the control channel): its spec joins the table
            index = self._index[id(spec)] = len(self.specs)
            self.specs.append(spec)
        rec = TaskRecord(self.new_id(), index, params, ctx.meta, now)
        self._enter(rec, spec)
        self.advance(rec)
        self.records[rec.id] = rec
        self._prune()
        self._saved(rec)
        return rec

    def created_result(self, rec: TaskRecord) -> dict[str, Any]:
        """The ``CreateTaskResult``: the task, flat, with ``resultType: task``."""
        result = {"resultType": "task", **self.wire(rec)}
        return self.envelope.complete(p.TOOLS_CALL, result)

    # ------------------------------------------------------------ the life of a task

    def spec_of(self, rec: TaskRecord) -> TaskSpec:
        return self.specs[rec.spec]

    def _enter(self, rec: TaskRecord, spec: TaskSpec) -> None:
        """Take the status and message of the phase the record is now in."""
        if rec.phase < len(spec.phases):
            phase = spec.phases[rec.phase]
            rec.status = phase.status
            rec.message = phase.statusMessage if phase.statusMessage is not None else spec.statusMessage
            if phase.status == "input_required" and spec.faults is not None and spec.faults.reuseInputKey:
                for key in self.input_keys(rec, phase):  # the fault: a key answered before is asked again
                    rec.answers.pop(key, None)
        rec.version += 1
        self.changed = True

    def _phase_end(self, rec: TaskRecord, phase: TaskPhase, now: float) -> float | None:
        """When the current phase ended (``None``: it has not)."""
        if phase.status == "input_required":
            keys = self.input_keys(rec, phase)
            return now if all(k in rec.answers for k in keys) else None
        if phase.after is not None:
            end = rec.phase_start + phase.after.seconds * self.time_scale
            return end if now >= end else None
        if phase.polls is not None:
            return now if rec.polls >= phase.polls else None
        if phase.state is not None:
            wanted = [phase.state] if isinstance(phase.state, str) else phase.state
            return now if self.state() in wanted else None
        return None  # works until cancelled

    def advance(self, rec: TaskRecord) -> bool:
        """Bring ``rec`` up to date with the clock, its counters and the named state; changed?"""
        if rec.status in TERMINAL or rec.driven is not None:
            return False
        spec = self.spec_of(rec)
        now = self.clock()
        before = rec.version
        while rec.status not in TERMINAL:
            if rec.phase >= len(spec.phases):
                self._finish(rec, spec, max(rec.phase_start, rec.updated))
                break
            end = self._phase_end(rec, spec.phases[rec.phase], now)
            if end is None:
                break
            rec.phase += 1
            rec.phase_start = rec.updated = end
            rec.polls = 0
            self._enter(rec, spec)
        return rec.version != before

    def _finish(self, rec: TaskRecord, spec: TaskSpec, at: float) -> None:
        outcome: dict[str, Any] = {"result": {"content": []}}
        if spec.outcome and self.render_outcome is not None:
            outcome = self.render_outcome(self.context(rec), spec.outcome)
        rec.outcome = outcome
        rec.status = "failed" if "error" in outcome else "completed"
        rec.updated = at
        rec.message = spec.statusMessage if rec.message is None else rec.message
        rec.version += 1
        self.changed = True

    def next_deadline(self, rec: TaskRecord) -> float | None:
        """The clock value at which time alone moves ``rec`` on (``None``: time alone never does).

        Expiry is not such a moment: nothing is announced when a task expires."""
        spec = self.spec_of(rec)
        if rec.status in TERMINAL or rec.driven is not None or rec.phase >= len(spec.phases):
            return None
        after = spec.phases[rec.phase].after
        return None if after is None else rec.phase_start + after.seconds * self.time_scale

    def expires(self, rec: TaskRecord, spec: TaskSpec) -> float:
        assert spec.ttlMs is not None
        return rec.created + spec.ttlMs / 1000 * self.time_scale

    def input_keys(self, rec: TaskRecord, phase: TaskPhase) -> list[str]:
        keys = list(phase.inputRequests or {})
        faults = self.spec_of(rec).faults
        if faults is not None and faults.reuseInputKey and keys:
            first = self._first_input_key(self.spec_of(rec))
            if first is not None:
                keys = [f"{first}" if i == 0 else k for i, k in enumerate(keys)]
        return keys

    @staticmethod
    def _first_input_key(spec: TaskSpec) -> str | None:
        for phase in spec.phases:
            for key in phase.inputRequests or {}:
                return key
        return None

    def outstanding(self, rec: TaskRecord) -> dict[str, Any]:
        """The input requests of an ``input_required`` task not answered yet, rendered."""
        if rec.driven is not None:
            asked = rec.driven["inputRequests"] if rec.status == "input_required" else {}
            return {k: v for k, v in asked.items() if k not in rec.answers}
        spec = self.spec_of(rec)
        if rec.status != "input_required" or rec.phase >= len(spec.phases):
            return {}
        phase = spec.phases[rec.phase]
        requests = templates.render(phase.inputRequests or {}, self.context(rec).scope())
        keys = self.input_keys(rec, phase)
        faulty = dict(zip(keys, requests.values()))
        reuse = spec.faults is not None and spec.faults.reuseInputKey
        return {k: v for k, v in faulty.items() if reuse or k not in rec.answers}

    def context(self, rec: TaskRecord) -> RequestContext:
        """The original request's context again, with the answers so far (templates read both)."""
        req = jsonrpc.Request(None, p.TOOLS_CALL, rec.params, {})
        ctx = RequestContext(req, rec.meta, self.state())
        if rec.answers:
            ctx.set_rounds(1, rec.answers)
        return ctx

    # ------------------------------------------------------------ the three methods

    def stored(self, task_id: str, request_id: Any) -> TaskRecord | None:
        """``get``, a corrupt stored record answered as the internal error it is (and left as it is):
        what both ``tasks/*`` and the control channel's task operations look a task up with."""
        try:
            return self.get(task_id)
        except CorruptRecord as exc:
            raise errors.ClientError(
                f"Internal error: the session directory's record of task {task_id} is corrupt ({exc}); it was left as it is",
                data={"taskId": task_id},
                request_id=request_id,
            ) from None

    def expired(self, rec: TaskRecord) -> bool:
        """Has the task's ``ttlMs`` passed (it is then unknown to every request)?"""
        spec = self.spec_of(rec)
        return spec.ttlMs is not None and self.clock() >= self.expires(rec, spec)

    def find(self, task_id: Any, request_id: Any) -> TaskRecord:
        """The task ``task_id`` brought up to date; -32602 when missing, unknown or expired."""
        if task_id is None:
            raise errors.InvalidParams("Invalid params: 'taskId' missing", request_id=request_id)
        if type(task_id) is not str:
            raise errors.InvalidParams("Invalid params: 'taskId' must be a string", request_id=request_id)
        rec = self.stored(task_id, request_id)
        if rec is None:
            raise errors.InvalidParams("Failed to retrieve task: Task not found", data={"taskId": task_id}, request_id=request_id)
        if self.expired(rec):
            raise errors.InvalidParams("Failed to retrieve task: Task has expired", data={"taskId": task_id}, request_id=request_id)
        if self.advance(rec):
            self._saved(rec)
        return rec

    def count_poll(self, rec: TaskRecord) -> None:
        """A ``tasks/get`` answered: the poll counts for the phase the task is in."""
        rec.polls += 1
        rec.total_polls += 1
        self._saved(rec)

    def get_result_text(self, rec: TaskRecord) -> str:
        """The ``tasks/get`` result as JSON text, encoded once per version of the task.

        Polling is what clients of the extension do most: a task that has not
        changed is answered from this text (the request id is the only hole),
        so a poll costs little more than a compiled reply."""
        cached = self._texts.get(rec.id)
        if cached is not None and cached[0] == rec.version:
            return cached[1]
        text = jsonrpc.encode_text(self.envelope.complete(p.TASKS_GET, self.detailed(rec)))
        if len(self._texts) >= MAX_RECORDS:
            self._texts.clear()
        self._texts[rec.id] = (rec.version, text)
        return text

    def after_poll(self, rec: TaskRecord) -> None:
        """A poll may end a ``polls:`` phase: the next look at the task sees the next phase."""
        if self.advance(rec):
            self._saved(rec)

    def update(self, task_id: Any, responses: Any, request_id: Any) -> TaskRecord:
        """``tasks/update``: accept answers to outstanding input requests, ignore the rest."""
        rec = self.find(task_id, request_id)
        if type(responses) is not dict:
            what = "missing" if responses is None else "must be an object"
            raise errors.InvalidParams(f"Invalid params: 'inputResponses' {what}", request_id=request_id)
        if rec.status != "input_required":
            raise errors.InvalidParams(
                f"Invalid params: task {task_id} is not waiting for input (status {rec.status})",
                data={"taskId": task_id, "status": rec.status},
                request_id=request_id,
            )
        outstanding = self.outstanding(rec)
        for key, value in responses.items():
            req = outstanding.get(key)
            if req is None:
                continue  # not outstanding: ignored, as the extension says
            kind = req.get("method") if type(req) is dict else None
            problem = mrtr.check_response(kind, value) if type(kind) is str else None
            if problem is None and type(value) is not dict:
                problem = "it must be an object"
            if problem:
                raise errors.InvalidParams(
                    f"Invalid params: inputResponses[{key!r}] is not a valid answer to {kind}: {problem}",
                    request_id=request_id,
                )
        accepted = {k: v for k, v in responses.items() if k in outstanding}
        if accepted:
            rec.answers.update(accepted)
            rec.updated = self.clock()
            rec.version += 1
            self.changed = True
            if rec.driven is not None and not self.outstanding(rec):
                rec.status = "working"  # a driven task asked for input and has it all: it works on
            self.advance(rec)
        self._saved(rec)
        return rec

    def cancel(self, task_id: Any, request_id: Any) -> TaskRecord:
        """``tasks/cancel``: acknowledged always; honoured if the scenario says so and not ended."""
        rec = self.find(task_id, request_id)
        rec.cancel_asked = True
        if rec.status not in TERMINAL and self.spec_of(rec).cancel == "honour":
            rec.status = "cancelled"
            rec.message = "cancelled at the client's request"
            rec.updated = self.clock()
            rec.version += 1
            self.changed = True
        self._saved(rec)
        return rec

    # ------------------------------------------------------------ driven from the control channel

    def drive(
        self,
        rec: TaskRecord,
        status: str,
        *,
        message: str | None,
        outcome: dict[str, Any] | None = None,
        input_requests: dict[str, Any] | None = None,
        poll_interval: int | None = None,
    ) -> None:
        """Put ``rec`` in ``status`` now (the control channel's ``setTask``; its caller checked the
        extension's rules: payload by status, no way out of a terminal status unless forced).

        From then on the script no longer moves the task (``advance`` leaves it alone); the
        client's ``tasks/update`` answers the given ``input_requests`` (all answered: ``working``
        again) and ``tasks/cancel`` is honoured or not as the scenario says."""
        driven = rec.driven if rec.driven is not None else {"inputRequests": {}, "pollIntervalMs": None}
        if input_requests is not None:
            driven["inputRequests"] = input_requests
        if poll_interval is not None:
            driven["pollIntervalMs"] = poll_interval
        rec.driven = driven
        rec.status = status
        rec.message = message
        rec.outcome = outcome if status in ("completed", "failed") else None
        rec.updated = self.clock()
        rec.version += 1
        self.changed = True
        self._saved(rec)

    def announce(self, rec: TaskRecord, live: Callable[[Any], bool]) -> list[Send]:
        """``notifications/tasks`` with ``rec``'s state to every live stream watching it, whether or not
        it has seen this version (the control channel's ``emit``: a repeat is what was asked for)."""
        subs = self.watchers.get(rec.id)
        if subs:
            for sid in subs:
                subs[sid] = None  # never a state: every stream is sent the state once more
        return self.notifications(rec, live)

    # ------------------------------------------------------------ wire shapes

    def wire(self, rec: TaskRecord) -> dict[str, Any]:
        """The ``Task`` fields (as in ``CreateTaskResult``)."""
        spec = self.spec_of(rec)
        interval = spec.pollIntervalMs
        if rec.driven is not None and rec.driven.get("pollIntervalMs") is not None:
            interval = rec.driven["pollIntervalMs"]
        elif rec.phase < len(spec.phases) and (pi := spec.phases[rec.phase].pollIntervalMs) is not None:
            interval = pi
        out: dict[str, Any] = {"taskId": rec.id, "status": rec.status}
        if rec.message is not None:
            out["statusMessage"] = rec.message
        out["createdAt"] = iso(rec.created)
        out["lastUpdatedAt"] = iso(rec.updated)
        out["ttlMs"] = spec.ttlMs
        out["pollIntervalMs"] = interval
        return out

    def detailed(self, rec: TaskRecord) -> dict[str, Any]:
        """The ``DetailedTask``: the task with its status's payload (result, error, inputRequests)."""
        out = self.wire(rec)
        if rec.status == "input_required":
            out["inputRequests"] = self.outstanding(rec)
        elif rec.outcome is not None and rec.status in ("completed", "failed"):
            out.update(rec.outcome)
        return out

    # ------------------------------------------------------------ notifications/tasks

    def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id`` (parsed now if the store read it as text).

        A stored record that does not fit raises ``CorruptRecord`` and stays as
        it was (start-up does not parse records: a session of 10,000 ended
        tasks would pay for it at every spawn)."""
        rec = self.records.get(task_id)
        if rec is None:
            text = self.raw.get(task_id)
            if text is None and self.lookup is not None:
                text = self.lookup(task_id)
            if text is not None:
                try:
                    data = json.loads(text)
                except ValueError as exc:
                    raise CorruptRecord(f"not JSON ({exc})") from None
                rec = self.records[task_id] = TaskRecord.from_json(data, task_id, len(self.specs))
                self.raw.pop(task_id, None)
                # Another process wrote it: its version may equal the one this process encoded last
                # (a timed change each made on its own, an outcome rendered by each), so no cached text.
                self._texts.pop(task_id, None)
        return rec

    def known_ids(self) -> list[str]:
        """Every task id this table can answer for, oldest first: the archived ones (a session's
        ended tasks, read only when asked for), then those in memory and in the log."""
        here = [*self.records, *self.raw]
        if self.archived_ids is None:
            return here
        present = set(here)
        return [tid for tid in self.archived_ids() if tid not in present] + here

    def peek(self, task_id: str) -> TaskRecord | None:
        """``get``, with a corrupt record taken as absent (streams and pruning skip it; a request for
        the task itself gets the error)."""
        try:
            return self.get(task_id)
        except CorruptRecord:
            return None

    def load(self, task_id: str, text: str) -> None:
        """The store read a newer version of a record (another process changed it)."""
        self.records.pop(task_id, None)
        self.raw[task_id] = text

    def watch(self, subscription_id: Any, task_ids: list[str]) -> None:
        for tid in task_ids:
            rec = self.peek(tid)
            self.watchers.setdefault(tid, {})[subscription_id] = None if rec is None else seen_key(rec)

    def unwatch(self, subscription_id: Any) -> None:
        for tid in list(self.watchers):
            subs = self.watchers[tid]
            subs.pop(subscription_id, None)
            if not subs:
                del self.watchers[tid]

    def notifications(self, rec: TaskRecord, live: Callable[[Any], bool]) -> list[Send]:
        """``notifications/tasks`` for every stream watching ``rec`` that has not seen its state."""
        subs = self.watchers.get(rec.id)
        if not subs:
            return []
        out = []
        key = seen_key(rec)
        for sid, seen in list(subs.items()):
            if not live(sid):
                del subs[sid]
            elif seen != key:
                subs[sid] = key
                out.append(self._notification(rec, sid))
        return out

    def notify_watchers(self, live: Callable[[Any], bool], subscription_id: Any = None) -> list[Send]:
        """``notifications/tasks`` for every watched task whose state a stream has not seen yet.

        The one place notifications are made outside a request's own answer:
        each watched task is brought up to date first (its clock, and what the
        session store read from other processes), then every live stream
        watching it (or only ``subscription_id``'s) that last saw another
        state gets the full state. A stream's rest calls it when it wakes; so
        can anything else that changed tasks behind the streams' back (the
        control channel), writing what it returns.
        """
        out: list[Send] = []
        for tid in list(self.watchers):
            subs = self.watchers.get(tid)
            if not subs or (subscription_id is not None and subscription_id not in subs):
                continue
            rec = self.peek(tid)
            if rec is None:
                continue  # forgotten (past the bound) by another process, or corrupt: nothing to say
            if self.advance(rec):
                self._saved(rec)
            key = seen_key(rec)
            for sid, seen in list(subs.items()):
                if subscription_id is not None and sid != subscription_id:
                    continue
                if not live(sid):
                    del subs[sid]
                elif seen != key:
                    subs[sid] = key
                    out.append(self._notification(rec, sid))
            if not subs:
                del self.watchers[tid]
        return out

    def _notification(self, rec: TaskRecord, sid: Any) -> Send:
        params = {**self.detailed(rec), "_meta": {p.META_SUBSCRIPTION_ID: sid}}
        return self.envelope.notification(p.TASKS_NOTIFICATION, params)

    def stream(self, subscription_id: Any, task_ids: list[str], live: Callable[[Any], bool]) -> Iterator[Action | None]:
        """The rest of a listen stream that watches tasks: a notification whenever one changes.

        It waits (``WaitTasks``) until the next moment time alone changes a
        watched task, or until the shell says tasks changed (a request, or the
        session store reading another process's change), then sends what
        changed (``notify_watchers``).
        """
        try:
            while live(subscription_id):
                yield from self.notify_watchers(live, subscription_id)
                deadlines = []
                for tid in task_ids:
                    rec = self.peek(tid)
                    due = None if rec is None else self.next_deadline(rec)
                    if due is not None:
                        deadlines.append(due)
                wait = None if not deadlines else max(0.0, min(deadlines) - self.clock())
                yield WaitTasks(wait)
        finally:
            self.unwatch(subscription_id)

    # ------------------------------------------------------------ bounds and the store

    def _prune(self) -> None:
        """Forget the oldest ended tasks past ``MAX_RECORDS`` (memory, and a session's store, stay bounded)."""
        excess = len(self.records) + len(self.raw) - MAX_RECORDS
        if excess <= 0:
            return
        for tid in list(self.raw):  # rare: past the bound, what other processes wrote is read too
            self.peek(tid)  # (a corrupt record stays text, and is never pruned)
        for tid in [t for t, r in self.records.items() if r.status in TERMINAL][:excess]:
            del self.records[tid]
            self.dirty.pop(tid, None)
            self.forgotten[tid] = None

    def _saved(self, rec: TaskRecord) -> None:
        self.dirty[rec.id] = None

    def take_dirty(self) -> list[TaskRecord]:
        """The records changed since the last call (the session store writes them)."""
        out = [self.records[t] for t in self.dirty if t in self.records]
        self.dirty.clear()
        return out


__all__ = ["REQUIRED_CAPABILITY", "TERMINAL", "CorruptRecord", "TaskRecord", "TaskTable", "has_extension", "iso", "missing_extension", "seen_key"]
