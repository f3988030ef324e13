"""One task's state as plain values (``TaskRecord``), kept as JSON between processes.

A session directory keeps each record as a line of JSON (the session store writes
``to_json``, and reads it back with ``from_json``, checked: a record that does not fit is a
``CorruptRecord``, answered as an internal error when the task is asked for and otherwise left
as it is). Sans-I/O.
"""

from __future__ import annotations

import json
from typing import Any

TERMINAL = frozenset({"completed", "failed", "cancelled"})
STATUSES = TERMINAL | {"working", "input_required"}
MAX_RECORDS = 100_000  # finished tasks beyond this are forgotten, oldest first (bounded memory and store)


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


def seen_key(rec: TaskRecord) -> tuple[Any, ...]:
    """What tells one observable state of a task from another, for notifications.

    The version alone is not enough across processes: two processes may each
    bump it once from the same record, so the status and the time of the
    change go with it."""
    return (rec.version, rec.status, rec.updated, rec.phase, len(rec.answers))
