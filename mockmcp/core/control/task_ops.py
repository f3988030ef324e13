"""The control operations on tasks (the Tasks extension): ``listTasks``, ``getTask``, ``setTask``.

A test reads a task as the client would see it, or drives it: ``setTask`` puts it in a status
with its payload, by the extension's rules unless ``force`` (a deliberate fault), and from then
on the task's script no longer moves it (``TaskTable.drive``). Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Callable

from mockmcp.wire import errors
from mockmcp.scenario import templates
from mockmcp.scenario.problems import did_you_mean
from mockmcp.core import tasks
from mockmcp.core.actions import Send
from mockmcp.core.control.outcome import Outcome
from mockmcp.core.control.params import NotFound, bool_param, ok, str_param
from mockmcp.core.control.surface import ControlledEngine, Fragments

TASK_STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
MAX_TASK_LIST = 1_000  # tasks one `listTasks` answer names at most (the newest)
PAYLOAD = {"input_required": "inputRequests", "completed": "result", "failed": "error"}  # what goes with a status

Op = Callable[[Any, dict[str, Any]], Outcome | dict[str, Any]]


class TaskOps:
    """Reads and drives the engine's tasks for the control channel."""

    def __init__(self, engine: ControlledEngine, fragments: Fragments) -> None:
        self.engine = engine
        self.fragments = fragments

    def operations(self) -> dict[str, Op]:
        return {"listTasks": self.list_tasks, "getTask": self.get_task, "setTask": self.set_task}

    def live(self, subscription_id: Any) -> bool:
        return subscription_id in self.engine.session.subscriptions

    def task(self, params: dict[str, Any], rid: Any) -> tasks.TaskRecord:
        """The task ``params.taskId`` names, brought up to date with its script (NotFound if none)."""
        table = self.engine.tasks
        task_id = str_param(params, "taskId", rid)
        rec = table.held.stored(task_id, rid)
        if rec is None:
            known = table.held.known_ids()[-10:]
            raise NotFound(
                f"no task {task_id!r}{did_you_mean(task_id, known)} (newest: {', '.join(known) or 'none'})",
                data={"taskId": task_id},
                request_id=rid,
            )
        if table.script.expired(rec):
            raise NotFound(f"task {task_id!r} has expired (its ttlMs passed)", data={"taskId": task_id}, request_id=rid)
        table.advance(rec)  # (if its script moved it, the caller's notifications carry that too)
        return rec

    def announce(self, params: dict[str, Any], rid: Any) -> list[Send]:
        """``emit`` of ``tasks``: the task's state to every stream watching it, seen or not."""
        return self.engine.tasks.watching.announce(self.task(params, rid), self.live)

    def list_tasks(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        table = self.engine.tasks
        ids = table.held.known_ids()  # (archived ended tasks of a session included)
        out = []
        for tid in ids[-MAX_TASK_LIST:]:
            rec = table.peek(tid)  # (a corrupt record is left out)
            if rec is not None:
                out.append({"taskId": tid, "status": rec.status, "tool": rec.params.get("name")})
        return ok(rid, {"tasks": out, "total": len(ids)})

    def get_task(self, rid: Any, params: dict[str, Any]) -> Outcome:
        rec = self.task(params, rid)
        table = self.engine.tasks
        return Outcome(ok(rid, {"task": table.detailed(rec)}), table.notifications(rec, self.live))

    def set_task(self, rid: Any, params: dict[str, Any]) -> Outcome:
        """Drive a task: a new status with its payload, by the extension's rules unless ``force``."""
        rec = self.task(params, rid)
        table = self.engine.tasks
        status = str_param(params, "status", rid)
        if status not in TASK_STATUSES:
            raise errors.InvalidParams(
                f"Invalid params: status must be one of {', '.join(TASK_STATUSES)}, not {status!r}{did_you_mean(status, TASK_STATUSES)}",
                request_id=rid,
            )
        force = bool_param(params, "force", rid, default=False)
        notify = bool_param(params, "notify", rid, default=True)
        if rec.status in tasks.TERMINAL and not force:
            raise errors.InvalidParams(
                f"Invalid params: task {rec.id} is {rec.status}, a terminal status, which never changes "
                "(force: true changes it anyway, as a deliberate fault)",
                data={"taskId": rec.id, "status": rec.status},
                request_id=rid,
            )
        phase, outcome = _change(params, status, rid)
        message = str_param(params, "statusMessage", rid, required=False)
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
            requests = templates.render(requests, table.script.context(rec).scope())
        rendered = table.script.rendered_outcome(rec, spec.outcome) if spec.outcome else None
        previous = rec.status
        table.drive(
            rec, status, message=message, outcome=rendered, input_requests=requests,
            poll_interval=spec.phases[0].pollIntervalMs if spec.phases else None,
        )
        sends: list[Send] = []
        if notify:
            sends = table.notifications(rec, self.live)
        else:  # the streams are not told of this version, now or later
            table.watching.mark_seen(rec)
        return Outcome(ok(rid, {"task": table.detailed(rec), "previous": previous, "delivered": len(sends)}), sends)


def _change(params: dict[str, Any], status: str, rid: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The phase and outcome of a task file that ``setTask``'s status and payload amount to."""
    for key in ("inputRequests", "result", "error"):
        if key in params and PAYLOAD.get(status) != key:
            raise errors.InvalidParams(f"Invalid params: {key!r} does not go with status {status}", request_id=rid)
    if status in ("input_required", "failed") and PAYLOAD[status] not in params:
        raise errors.InvalidParams(f"Invalid params: status {status} needs {PAYLOAD[status]!r}", request_id=rid)
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
    return phase, outcome
