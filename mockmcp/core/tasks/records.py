"""Task records: one task's state as plain JSON (``TaskRecord``), and the records a table holds
(``TaskRecords``): in memory, as text another process wrote, or in an archive.

A session directory keeps each record as a line of JSON (the session store writes ``to_json``
and reads it back with ``from_json``, checked: a record that does not fit is a
``CorruptRecord``, answered as an internal error when the task is asked for and otherwise left
as it is). The session store reads the other processes' records as JSON text (``raw``: parsed
when first looked at, so a session of 10,000 ended tasks starts without parsing them), finds
ended tasks it archived through ``lookup``, and writes what changed here (``take_dirty``) and
what was forgotten past ``MAX_RECORDS``. Without one, the records live as long as the process.
The core never touches a file. Sans-I/O.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from mockmcp.wire import errors

TERMINAL = frozenset({"completed", "failed", "cancelled"})
STATUSES = TERMINAL | {"working", "input_required"}
MAX_RECORDS = 100_000  # finished tasks beyond this are forgotten, oldest first (bounded memory and store)


class TaskRecord:
    """One task's state: plain values only, so it can be kept as JSON between processes."""

    __slots__ = (
        "id", "spec", "params", "meta", "created", "updated", "phase", "phase_start", "polls",
        "total_polls", "answers", "status", "message", "outcome", "version", "cancel_asked",
        "fault_step", "driven", "creating_round",
    )

    def __init__(
        self, id: str, spec: int, params: dict[str, Any], meta: dict[str, Any], now: float,
        creating_round: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.spec = spec  # index in scenario_facts(scenario)[0]
        self.params = params  # the tools/call params (name, arguments): the outcome's templates read them
        self.meta = meta
        # The multi round-trip exchange that ended in this task (its last round: ``round``, the
        # ``inputResponses`` of every round, the scenario's ``requestState`` text and the
        # ``missingInputs``), or None for a task made by a first round. Kept apart from ``answers``:
        # those are the task's own, whose keys are unique for its life whatever the exchange used.
        self.creating_round = creating_round
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
    def from_text(cls, text: str, task_id: str, specs: int) -> TaskRecord:
        """A record from the JSON text a session store read; ``CorruptRecord`` if it does not fit."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CorruptRecord(f"not JSON ({exc})") from None
        return cls.from_json(data, task_id, specs)

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
        creating = data.get("creating_round")
        if creating is not None and (type(creating.get("round")) is not int or type(creating.get("inputResponses")) is not dict):
            raise CorruptRecord("'creating_round' has no round number and inputResponses object")
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
    "cancel_asked": (bool,), "fault_step": (int,), "driven": (dict, type(None)), "creating_round": (dict, type(None)),
}
_LATER: dict[str, Any] = {"driven": None, "creating_round": None}  # fields added after the format's first version: their value in older records


def seen_key(rec: TaskRecord) -> tuple[Any, ...]:
    """What tells one observable state of a task from another, for notifications.

    The version alone is not enough across processes: two processes may each
    bump it once from the same record, so the status and the time of the
    change go with it."""
    return (rec.version, rec.status, rec.updated, rec.phase, len(rec.answers))


if TYPE_CHECKING:  # (aliases for annotations only: a spawn does not pay for building them)
    Lookup = Callable[[str], str | None]  # a task id -> its record's JSON text, or None


class TaskRecords:
    """The records of one session's tasks, by id, and which changed since the store last took them.

    ``spec_count`` says how many task scripts there are (a record naming another does not fit);
    ``parsed`` is told of each id whose record was read from text (it was written elsewhere).
    """

    def __init__(
        self,
        spec_count: Callable[[], int],
        parsed: Callable[[str], None],
        lookup: Lookup | None = None,
        archived_ids: Callable[[], list[str]] | None = None,
    ) -> None:
        self.spec_count = spec_count
        self.parsed = parsed
        self.records: dict[str, TaskRecord] = {}
        # Records another process wrote, as the JSON text the session store read.
        self.raw: dict[str, str] = {}
        # Where a record neither kept nor read as text is looked for last (the session store's
        # archive of ended tasks, read only when asked), and what it can find.
        self.lookup = lookup
        self.archived_ids = archived_ids
        self.dirty: dict[str, None] = {}  # ids changed since the store last took them
        self.forgotten: dict[str, None] = {}  # ids pruned (the store compacts them away)

    def add(self, rec: TaskRecord) -> None:
        """A new task: kept, the oldest ended ones past the bound forgotten."""
        self.records[rec.id] = rec
        self._prune()
        self.saved(rec)

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
                rec = self.records[task_id] = TaskRecord.from_text(text, task_id, self.spec_count())
                self.raw.pop(task_id, None)
                self.parsed(task_id)
        return rec

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

    def peek(self, task_id: str) -> TaskRecord | None:
        """``get``, with a corrupt record taken as absent (streams and pruning skip it; a request for
        the task itself gets the error)."""
        try:
            return self.get(task_id)
        except CorruptRecord:
            return None

    def known_ids(self) -> list[str]:
        """Every task id this table can answer for, oldest first: the archived ones (a session's
        ended tasks, read only when asked for), then those in memory and in the log."""
        here = [*self.records, *self.raw]
        if self.archived_ids is None:
            return here
        present = set(here)
        return [tid for tid in self.archived_ids() if tid not in present] + here

    def load(self, task_id: str, text: str) -> None:
        """The store read a newer version of a record (another process changed it)."""
        self.records.pop(task_id, None)
        self.raw[task_id] = text

    def saved(self, rec: TaskRecord) -> None:
        """``rec`` changed: the store writes it next."""
        self.dirty[rec.id] = None

    def take_dirty(self) -> list[TaskRecord]:
        """The records changed since the last call (the session store writes them)."""
        out = [self.records[t] for t in self.dirty if t in self.records]
        self.dirty.clear()
        return out

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
