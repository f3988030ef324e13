"""The ``conformance-tasks`` client scenario and the ``tasks-faults`` server faults, through the real process.

A correct raw client of the Tasks extension passes ``conformance-tasks``: it
polls at ``pollIntervalMs``, answers the input request once, stops at the
terminal status, and when the mock dies mid-task (the scenario kills it on the
second poll) restarts it with the same session directory and polls the same
``taskId`` on. Wrong clients fail it the way the scenario says: one that calls
the tool again after the restart, one that answers twice, one that polls too fast.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from support.taskclient import TaskClient, walk_the_task_faults

SCALE = 0.25  # pollIntervalMs 200 -> 50 ms


def _client(tmp_path: Path, n: int) -> TaskClient:
    return TaskClient("conformance-tasks", "--session", str(tmp_path / "s"), "--report", str(tmp_path / f"r{n}.json"),
                      time_scale=SCALE, start_id=100 * n)


def _run(tmp_path: Path, *, resubmit: bool = False, answer_twice: bool = False, wait: bool = True) -> dict[str, Any]:
    n = 1
    client = _client(tmp_path, n)
    created = client.call("job")["result"]
    tid = created["taskId"]
    interval = created["pollIntervalMs"] / 1000 * SCALE
    answered = 0
    for _ in range(20):
        if wait:
            time.sleep(interval)
        got = client.answer_or_eof(client.write("tasks/get", {"taskId": tid}, ))
        if got is None:  # the mock died: restart it on the same session
            client.close()
            n += 1
            client = _client(tmp_path, n)
            if resubmit:
                tid = client.call("job")["result"]["taskId"]
            continue
        state = got["result"]
        if state["status"] in ("completed", "failed", "cancelled"):
            break
        if state["status"] == "input_required" and (answered == 0 or answer_twice):
            for _ in range(2 if answer_twice else 1):
                client.ask("tasks/update", {"taskId": tid, "inputResponses": {"go": {"action": "accept", "content": {"go": True}}}})
                answered += 1
    assert state["status"] == "completed", state
    assert client.close() == 0
    return json.loads((tmp_path / f"r{n}.json").read_text())


def _failed(report: dict[str, Any]) -> set[str]:
    return {v["expectation"] for v in report["expectations"] if v["verdict"] == "failed"}


def _checks(report: dict[str, Any]) -> set[str]:
    return {f["check"] for f in report["findings"]}


def test_a_correct_client_passes_across_the_restart(tmp_path: Path) -> None:
    report = _run(tmp_path)
    assert report["ok"] and _failed(report) == set(), report["expectations"]
    assert len(report["processes"]) == 2  # one verdict over both processes
    assert not {"tasks.poll.tooFast", "tasks.poll.afterTerminal", "tasks.update.notOutstanding"} & _checks(report)


def test_a_client_that_calls_the_tool_again_after_the_restart_fails(tmp_path: Path) -> None:
    report = _run(tmp_path, resubmit=True)
    assert not report["ok"] and "started" in _failed(report)


def test_a_client_that_answers_twice_fails(tmp_path: Path) -> None:
    report = _run(tmp_path, answer_twice=True)
    assert "answered" in _failed(report) and "tasks.update.notOutstanding" in _checks(report)


def test_a_client_that_polls_too_fast_is_told(tmp_path: Path) -> None:
    report = _run(tmp_path, wait=False)
    assert "tasks.poll.tooFast" in _checks(report)


def test_tasks_faults_through_the_real_process() -> None:
    client = TaskClient("tasks-faults", time_scale=0.5)
    try:
        walk_the_task_faults(client)

        tid = client.call("hang_get")["result"]["taskId"]
        assert client.get(tid)["result"]["status"] == "working"
        rid = client.write("tasks/get", {"taskId": tid})
        assert client.ask("server/discover")["result"]["resultType"] == "complete"  # served; the hung get is not
        assert all(m.get("id") != rid for m in client.notifications)
    finally:
        assert client.close() == 0
