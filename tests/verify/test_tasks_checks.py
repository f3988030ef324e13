"""Client checks of the Tasks extension (taskchecks.py), and the task faults of the scenario format.

The checker is sans-I/O: it is fed what the server wrote and what the client
sent, with the time of each, so these tests hand it both. One real-process
test shows the findings reach the report of ``mockmcp run --report``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.messages import request
from support.taskclient import TaskClient
from support.taskcore import EXT, Core

from mockmcp.wire import protocol as p
from mockmcp.verify.task_checks import TaskChecker

CAPS = {p.META_CLIENT_CAPABILITIES: EXT}


def _req(rid: Any, method: str, params: dict[str, Any], meta: dict[str, Any] | None = CAPS) -> dict[str, Any]:
    return request(rid, method, params, meta)


class Wire:
    """A checker fed like the verifier feeds it, on a clock the test sets."""

    def __init__(self, time_scale: float = 1.0) -> None:
        self.checker = TaskChecker(time_scale)
        self.now = 100.0

    def client(self, msg: dict[str, Any]) -> list[str]:
        found = self.checker.request(msg["id"], msg["method"], msg["params"], msg, self.now)
        return [f.check for f in found]

    def server(self, rid: Any, result: dict[str, Any]) -> None:
        self.checker.server_message({"jsonrpc": "2.0", "id": rid, "result": result}, self.now)

    def create(self, rid: int = 1, method: str = "tools/call", tid: str = "t1", interval: int = 1000) -> None:
        self.client(_req(rid, method, {"name": "x"}))
        self.server(rid, {"resultType": "task", "taskId": tid, "status": "working", "pollIntervalMs": interval})


def test_polling_at_the_interval_is_fine_and_faster_is_a_warning() -> None:
    w = Wire()
    w.create()
    w.now += 1.0
    assert w.client(_req(2, "tasks/get", {"taskId": "t1"})) == []
    w.server(2, {"taskId": "t1", "status": "working", "pollIntervalMs": 1000})
    w.now += 0.2
    assert w.client(_req(3, "tasks/get", {"taskId": "t1"})) == ["tasks.poll.tooFast"]


def test_the_interval_is_scaled_by_the_time_scale() -> None:
    w = Wire(time_scale=0.1)
    w.create()
    w.now += 0.1
    assert w.client(_req(2, "tasks/get", {"taskId": "t1"})) == []


def test_polling_after_a_terminal_status_is_a_note() -> None:
    w = Wire()
    w.create()
    w.now += 1
    w.client(_req(2, "tasks/get", {"taskId": "t1"}))
    w.server(2, {"taskId": "t1", "status": "completed", "result": {"content": []}})
    w.now += 5
    assert w.client(_req(3, "tasks/get", {"taskId": "t1"})) == ["tasks.poll.afterTerminal"]


def test_update_with_keys_not_outstanding_is_an_error() -> None:
    w = Wire()
    w.create()
    w.now += 1
    w.client(_req(2, "tasks/get", {"taskId": "t1"}))
    w.server(2, {"taskId": "t1", "status": "input_required", "inputRequests": {"a": {"method": "roots/list", "params": {}}}})
    assert w.client(_req(3, "tasks/update", {"taskId": "t1", "inputResponses": {"a": {"roots": []}}})) == []
    assert w.client(_req(4, "tasks/update", {"taskId": "t1", "inputResponses": {"a": {"roots": []}, "zz": {}}})) == ["tasks.update.notOutstanding"]


def test_tasks_methods_without_the_capability_are_an_error() -> None:
    w = Wire()
    w.create()
    w.now += 1
    assert w.client(_req(2, "tasks/cancel", {"taskId": "t1"}, meta={p.META_CLIENT_CAPABILITIES: {}})) == ["tasks.capability.missing"]


def test_following_a_task_returned_to_an_unsupported_request_is_an_error() -> None:
    w = Wire()
    w.create(method="prompts/get", tid="p1")
    w.now += 1
    assert w.client(_req(2, "tasks/get", {"taskId": "p1"})) == ["tasks.result.unsupported"]


def test_findings_reach_the_report_through_the_real_process(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    client = TaskClient("tasks", "--report", str(report))
    tid = client.call("build")["result"]["taskId"]
    for _ in range(5):  # no pause: faster than pollIntervalMs (100 ms), and on after completion
        client.get(tid)
    client.ask("tasks/get", {"taskId": tid}, caps={})
    assert client.close() == 0
    checks = [f["check"] for f in json.loads(report.read_text())["findings"]]
    assert checks.count("tasks.poll.tooFast") >= 3
    assert "tasks.poll.afterTerminal" in checks and "tasks.capability.missing" in checks


def test_cancelling_a_task_with_notifications_cancelled_is_an_error() -> None:
    w = Wire()
    w.create(rid=7)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    assert [f.check for f in w.checker.notification(cancel["method"], cancel["params"], cancel)] == ["tasks.cancel.notification"]
    assert w.checker.notification("notifications/cancelled", {"requestId": "7"}, cancel) == []  # another id
    assert w.client(_req(8, "tasks/cancel", {"taskId": "t1"})) == []  # the way to cancel a task
    w.client(_req(7, "tools/list", {}))  # the id names another request from now on
    assert w.checker.notification(cancel["method"], cancel["params"], cancel) == []


def test_the_removed_methods_and_the_legacy_task_parameter_are_found() -> None:
    w = Wire()
    assert w.client(_req(1, "tasks/result", {"taskId": "t1"})) == ["tasks.method.removed"]
    assert w.client(_req(2, "tasks/list", {})) == ["tasks.method.removed"]
    assert w.client(_req(3, "tools/call", {"name": "x", "task": {"ttl": 60000}})) == ["tasks.request.taskParam"]
    assert w.client(_req(4, "tools/call", {"name": "x"})) == []
    legacy = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "x", "task": {"ttl": 60000}}}
    assert w.client(legacy) == []  # a 2025-11-25 request (no protocolVersion in _meta) may carry it


def test_the_sep_2663_client_checks_through_the_real_process(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    client = TaskClient("tasks", "--report", str(report))
    rid = client.write("tools/call", {"name": "forever", "arguments": {}})
    tid = client.answer(rid)["result"]["taskId"]
    assert client.proc.stdin is not None
    client.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}) + "\n").encode())
    client.proc.stdin.flush()
    assert client.ask("tasks/result", {"taskId": tid})["error"]["code"] == -32601
    plain = client.ask("tools/call", {"name": "quick", "arguments": {}, "task": {"ttl": 60000}}, caps={})["result"]
    assert plain["resultType"] == "complete"  # the hint promotes nothing
    assert client.ask("tasks/cancel", {"taskId": tid})["result"]["resultType"] == "complete"
    assert client.get(tid)["result"]["status"] == "cancelled"
    assert client.close() == 0
    checks = [f["check"] for f in json.loads(report.read_text())["findings"]]
    assert {"tasks.cancel.notification", "tasks.method.removed", "tasks.request.taskParam"} <= set(checks), checks


# ---------------------------------------------------------------- faults (the server wrong on demand)


def _faulty(faults: str, phases: str = "[{polls: 1}]", outcome: str = "[{text: ok}]") -> Core:
    return Core(
        "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps:\n"
        f"          - task: {{phases: {phases}, outcome: {outcome}, faults: {faults}}}\n"
    )


def test_fault_a_task_that_disappears() -> None:
    core = _faulty("{vanishAfterPolls: 1}")
    tid = core.start("t")
    assert core.get(tid)["result"]["status"] == "working"
    assert core.get(tid)["error"]["code"] == -32602


def test_fault_tasks_get_that_hangs() -> None:
    core = _faulty("{hangGetAfterPolls: 1}")
    tid = core.start("t")
    assert core.get(tid)["result"]["status"] == "working"
    assert [m for m in core.send("tasks/get", {"taskId": tid}) if "id" in m] == []  # never answered


def test_fault_a_status_that_goes_backwards() -> None:
    core = _faulty("{statusBackwards: true}")
    tid = core.start("t")
    statuses = [core.get(tid)["result"]["status"] for _ in range(4)]
    # the first poll ends the phase (completed); the next look says working, then the truth again
    assert statuses == ["working", "working", "completed", "completed"]
    assert core.engine.tasks.get(tid).status == "completed"


def test_fault_a_terminal_task_that_changes() -> None:
    core = _faulty("{terminalChanges: true}")
    tid = core.start("t")
    looks = [core.get(tid)["result"] for _ in range(3)]
    assert [x["status"] for x in looks] == ["working", "completed", "failed"]
    assert looks[2]["error"]["code"] == -32603


def test_fault_a_reused_input_key() -> None:
    ask = '{a: {method: roots/list, params: {}}}'
    ask2 = '{b: {method: roots/list, params: {}}}'
    core = _faulty("{reuseInputKey: true}", phases=f"[{{status: input_required, inputRequests: {ask}}}, {{status: input_required, inputRequests: {ask2}}}]")
    tid = core.start("t")
    assert list(core.get(tid)["result"]["inputRequests"]) == ["a"]
    core.ask("tasks/update", {"taskId": tid, "inputResponses": {"a": {"roots": []}}})
    again = core.get(tid)["result"]
    assert again["status"] == "input_required" and list(again["inputRequests"]) == ["a"]  # "b" asked under "a" again


def test_fault_a_task_returned_without_the_capability() -> None:
    core = _faulty("{ignoreCapability: true}")
    assert core.call("t", caps={})["result"]["resultType"] == "task"
