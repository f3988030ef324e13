"""Client checks of the Tasks extension: how a client polls, answers and cancels tasks.

Sans-I/O like ``checks``: ``TaskChecker`` follows the tasks the server handed
out (from what it wrote: ``CreateTaskResult``s, ``tasks/get`` results and
``notifications/tasks``) and judges each ``tasks/*`` request against them. The
time of each message is handed in by the verifier (the shell's clock), and
``time_scale`` is the run's ``--time-scale``, by which a scripted interval is
scaled like every other duration. Findings use the ids, levels and sections
of ``checks.CHECKS``.
"""

from __future__ import annotations

import json
from typing import Any

from mockmcp.wire import protocol as p
from mockmcp.verify.checks import Finding

TERMINAL = ("completed", "failed", "cancelled")
SLACK = 0.9  # a poll 10% early still counts as on time (timers are not exact)
# The 2025-11-25 tasks' methods, removed from the extension (a server answers them -32601).
REMOVED_METHODS = frozenset({"tasks/result", "tasks/list"})


class _Task:
    __slots__ = ("method", "interval", "last", "status", "outstanding", "answered")

    def __init__(self, method: str, interval: Any, now: float) -> None:
        self.method = method  # the request that created it
        self.interval = interval if type(interval) in (int, float) else None
        self.last = now  # when it was created or last polled
        self.status = "working"
        self.outstanding: set[str] = set()
        self.answered: set[str] = set()


class TaskChecker:
    def __init__(self, time_scale: float = 1.0) -> None:
        self.time_scale = time_scale
        self.tasks: dict[str, _Task] = {}
        self.pending: dict[Any, tuple[str, Any]] = {}  # request id -> (method, taskId)
        # Requests the server answered with a task, by id (JSON text): the task is what a client
        # cancels then (tasks/cancel), not the request (notifications/cancelled).
        self.answered_with_task: dict[str, str] = {}

    def request(self, rid: Any, method: str, params: dict[str, Any], message: dict[str, Any], now: float) -> list[Finding]:
        self.answered_with_task.pop(_key(rid), None)  # the id names this request from now on
        if method not in p.TASK_METHODS:
            if method in REMOVED_METHODS:
                return [Finding("tasks.method.removed", f"{method}: the extension removed it (a task's result comes inlined in tasks/get; there is no task list)", message, rid)]
            if method in p.TASK_AUGMENTABLE or method in (p.PROMPTS_GET, p.RESOURCES_READ):
                self._pend(rid, method, None)
                meta = params.get("_meta")
                if "task" in params and type(meta) is dict and p.META_PROTOCOL_VERSION in meta:
                    return [Finding(
                        "tasks.request.taskParam",
                        f"{method} with a 2025-11-25 'task' parameter: the server alone decides whether to answer with a task (declaring the extension is all a client does)",
                        message, rid,
                    )]
            return []
        out: list[Finding] = []
        meta = params.get("_meta")
        caps = meta.get(p.META_CLIENT_CAPABILITIES) if type(meta) is dict else None
        ext = caps.get("extensions") if type(caps) is dict else None
        if type(ext) is not dict or type(ext.get(p.TASKS_EXTENSION)) is not dict:
            out.append(Finding("tasks.capability.missing", f"{method} without the {p.TASKS_EXTENSION} extension in its client capabilities", message, rid))
        tid = params.get("taskId")
        self._pend(rid, method, tid)
        task = self.tasks.get(tid) if type(tid) is str else None
        if task is None:
            return out
        if task.method not in p.TASK_AUGMENTABLE:
            out.append(Finding(
                "tasks.result.unsupported",
                f"{method} for task {tid}, which the server returned to {task.method}: a task result for a request the extension does not augment is invalid, not a task to follow",
                message, rid,
            ))
        if method == p.TASKS_GET:
            if task.status in TERMINAL:
                out.append(Finding("tasks.poll.afterTerminal", f"tasks/get for task {tid}, already {task.status}", message, rid))
            elif task.interval is not None:
                waited = now - task.last
                want = task.interval / 1000 * self.time_scale
                if waited < want * SLACK:
                    out.append(Finding(
                        "tasks.poll.tooFast",
                        f"tasks/get for task {tid} {waited * 1000:.0f} ms after the last look; pollIntervalMs is {task.interval}"
                        + (f" (x{self.time_scale:g} time scale)" if self.time_scale != 1.0 else ""),
                        message, rid,
                    ))
            task.last = now
        elif method == p.TASKS_UPDATE:
            responses = params.get("inputResponses")
            keys = list(responses) if type(responses) is dict else []
            stray = [k for k in keys if k not in task.outstanding]
            if stray:
                why = ", ".join(f"{k!r} ({'already answered' if k in task.answered else 'never asked'})" for k in stray)
                out.append(Finding("tasks.update.notOutstanding", f"tasks/update for task {tid} answers keys that are not outstanding: {why}", message, rid))
            for k in keys:
                if k in task.outstanding:
                    task.outstanding.discard(k)
                    task.answered.add(k)
        return out

    def notification(self, method: str, params: Any, message: Any) -> list[Finding]:
        """A client notification: ``notifications/cancelled`` naming a request answered with a task."""
        if method != p.CANCELLED or type(params) is not dict:
            return []
        tid = self.answered_with_task.get(_key(params.get("requestId")))
        if tid is None:
            return []
        return [Finding(
            "tasks.cancel.notification",
            f"notifications/cancelled for request {params.get('requestId')!r}, answered with task {tid}: a task is cancelled with tasks/cancel",
            message,
        )]

    def _pend(self, rid: Any, method: str, tid: Any) -> None:
        self.pending[rid] = (method, tid)
        if len(self.pending) > 10_000:  # requests that never got an answer (cancelled): forget the oldest
            del self.pending[next(iter(self.pending))]

    def server_message(self, message: Any, now: float) -> None:
        if type(message) is not dict:
            return
        if message.get("method") == p.TASKS_NOTIFICATION and type(message.get("params")) is dict:
            self._observe(message["params"])
            return
        if "method" in message or "id" not in message:
            return
        entry = self.pending.pop(message["id"], None)
        result = message.get("result")
        if entry is None or type(result) is not dict:
            return
        method, _ = entry
        tid = result.get("taskId")
        if type(tid) is not str:
            return
        if result.get("resultType") == "task":
            self.tasks[tid] = _Task(method, result.get("pollIntervalMs"), now)
            del_old(self.tasks)
            self.answered_with_task[_key(message["id"])] = tid
            del_old(self.answered_with_task)
        elif method == p.TASKS_GET:
            if tid not in self.tasks:  # created by an earlier process of the session: follow it from here
                self.tasks[tid] = _Task(p.TOOLS_CALL, result.get("pollIntervalMs"), now)
            self._observe(result)

    def _observe(self, task_state: dict[str, Any]) -> None:
        task = self.tasks.get(task_state.get("taskId"))  # type: ignore[arg-type]
        if task is None:
            return
        status = task_state.get("status")
        if type(status) is str:
            task.status = status
        if type(task_state.get("pollIntervalMs")) in (int, float):
            task.interval = task_state["pollIntervalMs"]
        requests = task_state.get("inputRequests")
        if status == "input_required" and type(requests) is dict:
            task.outstanding = {k for k in requests if k not in task.answered}
        elif status != "input_required":
            task.outstanding = set()


def del_old(tasks: dict[str, Any], keep: int = 100_000) -> None:
    """Forget the oldest tasks past ``keep`` (a long session must not grow this for ever)."""
    for tid in list(tasks)[: max(0, len(tasks) - keep)]:
        del tasks[tid]


def _key(rid: Any) -> str:
    """A request id as a key (1 and "1" are two ids)."""
    return json.dumps(rid)
