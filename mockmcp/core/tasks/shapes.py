"""The Tasks extension's wire shapes of a record: ``Task``, ``DetailedTask``, ``CreateTaskResult``,
the ``tasks/get`` result (encoded once per version) and ``notifications/tasks``. Sans-I/O."""

from __future__ import annotations

from typing import Any

from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p
from mockmcp.core.actions import Send
from mockmcp.core.envelope import Envelope
from mockmcp.core.tasks.records import MAX_RECORDS, TaskRecord
from mockmcp.core.tasks.script import TaskScript


def iso(t: float) -> str:
    """An ISO 8601 UTC timestamp (milliseconds) of a clock value."""
    import datetime  # (only tasks need it: a spawn without them skips its import)

    when = datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


class TaskShapes:
    """What a record looks like on the wire, by its script (``script``) and in the scenario's envelope."""

    def __init__(self, script: TaskScript, envelope: Envelope) -> None:
        self.script = script
        self.envelope = envelope
        self._texts: dict[str, tuple[int, str]] = {}  # task id -> (version, tasks/get result text)

    def wire(self, rec: TaskRecord) -> dict[str, Any]:
        """The ``Task`` fields (as in ``CreateTaskResult``)."""
        spec = self.script.spec_of(rec)
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
            out["inputRequests"] = self.script.outstanding(rec)
        elif rec.outcome is not None and rec.status in ("completed", "failed"):
            out.update(rec.outcome)
        return out

    def created_result(self, rec: TaskRecord) -> dict[str, Any]:
        """The ``CreateTaskResult``: the task, flat, with ``resultType: task``."""
        result = {"resultType": "task", **self.wire(rec)}
        return self.envelope.complete(p.TOOLS_CALL, result)

    def result_text(self, rec: TaskRecord) -> str:
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

    def forget_text(self, task_id: str) -> None:
        """Another process wrote the record: its version may equal the one encoded here last (a
        timed change each made on its own, an outcome rendered by each), so no cached text."""
        self._texts.pop(task_id, None)

    def notification(self, rec: TaskRecord, subscription_id: Any) -> Send:
        """``notifications/tasks`` with ``rec``'s state, for the listen stream ``subscription_id``."""
        params = {**self.detailed(rec), "_meta": {p.META_SUBSCRIPTION_ID: subscription_id}}
        return self.envelope.notification(p.TASKS_NOTIFICATION, params)
