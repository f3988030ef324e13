"""How ``mockmcp demo`` follows a task of the Tasks extension (``io.modelcontextprotocol/tasks``).

A ``tools/call`` that answers ``resultType: "task"`` has not finished: its
result comes later, through ``tasks/get``. The demo follows it as a patient
client would, and prints only what a person wants to see:

- it polls ``tasks/get`` no sooner than the task's ``pollIntervalMs`` (the
  latest one the server gave, scaled by the run's time scale: a mock run with
  ``--time-scale 0.1`` keeps its scripted intervals but lives ten times faster),
  and prints a line each time the status or its message changes, not each poll;
- it answers an ``input_required`` task's new ``inputRequests`` keys with the
  demo's canned answers in one ``tasks/update`` (a key once answered is not
  answered again, as the extension asks);
- a task still running after ``MAX_POLLS`` polls is cancelled with
  ``tasks/cancel``, and given up on if it has not ended ``POLLS_AFTER_CANCEL``
  polls later: a demo, not a client with a job to finish.

Every outcome becomes a one-line verdict for the summary (the reply's ``demo``
key, so a failed task is never retried as a transient internal error). This
module knows the demo's client only through ``DemoClient`` (what it needs), so
``demo`` imports it and not the other way round.
"""

from __future__ import annotations

import json
import time
from typing import IO, Any, Protocol

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")
DEFAULT_POLL_MS = 500  # a task that names no interval is polled twice a second
LONGEST_WAIT = 5.0  # seconds: the demo never waits longer than this between two polls
MAX_POLLS = 20  # polls before the demo cancels a task that is still running
POLLS_AFTER_CANCEL = 5  # polls after tasks/cancel before the demo gives up on the task


class DemoClient(Protocol):
    """What following a task needs from the demo's session."""

    @property
    def out(self) -> IO[str]: ...

    @property
    def time_scale(self) -> float: ...

    def request(self, method: str, params: dict[str, Any] | None = None, *, tool: bool = False, quiet: bool = False) -> dict[str, Any]: ...

    def canned_answer(self, key: str, req: Any) -> dict[str, Any]: ...

    def show(self, reply: dict[str, Any]) -> None: ...


def follow(client: DemoClient, handle: dict[str, Any]) -> dict[str, Any]:
    """Follow the task ``handle`` (a ``CreateTaskResult``) to its end; a reply carrying the verdict."""
    task_id = handle.get("taskId")
    if not isinstance(task_id, str):
        return _done(None, "bad result (a task without a taskId)")
    interval = _interval(handle, DEFAULT_POLL_MS)
    client.out.write(f"    (a task: the demo polls tasks/get every {interval:g} ms, showing each change, until it ends)\n")
    seen: tuple[Any, Any, str] = (handle.get("status"), handle.get("statusMessage"), "")
    answered: set[str] = set()
    polls = 0
    cancelled_at: int | None = None
    while True:
        time.sleep(min(interval / 1000 * client.time_scale, LONGEST_WAIT))
        reply = client.request("tasks/get", {"taskId": task_id}, quiet=True)
        polls += 1
        task = reply.get("result")
        if "demo" in reply or not isinstance(task, dict):
            lost = reply.get("demo") or _error_text(reply)
            client.out.write(f"    task: lost at poll {polls}: {lost}\n")
            return _done(task, f"task lost: {lost}")
        status = task.get("status")
        interval = _interval(task, interval)
        now = (status, task.get("statusMessage"), _canonical(task.get("inputRequests")))
        if now != seen or status in TERMINAL:
            seen = now
            note = f" {json.dumps(now[1], ensure_ascii=False)}" if isinstance(now[1], str) else ""
            client.out.write(f"    task: {status}{note} (poll {polls})\n")
            again = sorted(set(task.get("inputRequests") or {}) & answered) if status == "input_required" else []
            if again:
                client.out.write(f"    (asked again under a key already answered: {', '.join(again)}; the demo does not answer a key twice)\n")
        if status in TERMINAL:
            return _ended(client, task, polls, cancelled_at)
        if status == "input_required":
            _answer(client, task_id, task.get("inputRequests"), answered)
        elif status != "working":
            return _done(task, f"bad task status {status!r}")
        if cancelled_at is None and polls >= MAX_POLLS:
            client.out.write(f"    (still not ended after {polls} polls: the demo cancels it)\n")
            client.request("tasks/cancel", {"taskId": task_id})
            cancelled_at = polls
        elif cancelled_at is not None and polls - cancelled_at >= POLLS_AFTER_CANCEL:
            client.out.write(f"    (still {status} {POLLS_AFTER_CANCEL} polls after tasks/cancel: the demo gives up on it)\n")
            return _done(task, f"gave up on the task after {polls} polls (tasks/cancel ignored)")


def _answer(client: DemoClient, task_id: str, requests: Any, answered: set[str]) -> None:
    """Answer the input requests not answered yet, all in one ``tasks/update``."""
    fresh = {k: v for k, v in requests.items() if k not in answered} if isinstance(requests, dict) else {}
    if not fresh:
        return
    client.out.write("    (the task needs input; the demo answers with tasks/update)\n")
    responses = {key: client.canned_answer(key, req) for key, req in fresh.items()}
    answered.update(fresh)
    client.request("tasks/update", {"taskId": task_id, "inputResponses": responses})


def _ended(client: DemoClient, task: dict[str, Any], polls: int, cancelled_at: int | None) -> dict[str, Any]:
    after = f"after {polls} poll{'s' if polls != 1 else ''}"
    match task.get("status"):
        case "completed":
            result = task.get("result")
            client.show({"result": result})
            flag = "isError; " if isinstance(result, dict) and result.get("isError") is True else ""
            return _done(task, f"ok ({flag}task completed {after})")
        case "failed":
            error = task.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            client.show({"error": error if isinstance(error, dict) else {"code": None, "message": repr(error)}})
            return _done(task, f"task failed {after}: error {code}")
        case _:
            by = " by the demo" if cancelled_at is not None else ""
            return _done(task, f"task cancelled{by} {after}")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if value is not None else ""


def _interval(task: dict[str, Any], fallback: float) -> float:
    value = task.get("pollIntervalMs")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else fallback


def _error_text(reply: dict[str, Any]) -> str:
    error = reply.get("error")
    if isinstance(error, dict):
        return f"error {error.get('code')}"
    return "bad result (not an object)"


def _done(task: Any, verdict: str) -> dict[str, Any]:
    """A reply standing for the whole task: the summary reads its ``demo`` note."""
    return {"jsonrpc": "2.0", "id": None, "result": task, "demo": verdict}
