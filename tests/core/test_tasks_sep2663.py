"""The Tasks extension as it stands now (SEP-2663, modelcontextprotocol/ext-tasks), on the core.

What the extension's current text asks of a server, each by default (``support.taskcore.Core``
checks every message against the extension's generated schema as well): a tool error is a
``completed`` task whose result has ``isError``; ``failed`` is for JSON-RPC errors only, inlined
as an error object; ``tasks/cancel`` ends a task ``cancelled``; a ``CreateTaskResult`` is only
returned once ``tasks/get`` finds the task; input keys are unique over a task's life. And a task
created by the last round of a multi round-trip exchange keeps that exchange's answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.taskcore import EXT, Core

from mockmcp.core.tasks import CorruptRecord, TaskRecord

ELICIT = {"method": "elicitation/create", "params": {"message": "Your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}

COMPOSED = """\
mockmcp: 1
tools:
  - name: hello
    replies:
      - when: {round: 1}
        steps:
          - inputRequired:
              inputRequests:
                user_name: %(ask)s
      - steps:
          - task:
              pollIntervalMs: 10
              phases:
                - {polls: 1}
                - status: input_required
                  inputRequests:
                    user_name: %(ask)s
              outcome:
                - text: "Hello {{ arguments.who }} / {{ inputResponses.user_name.content.name }} (round {{ round }})"
  - name: once
    replies:
      - when: {round: 1}
        steps:
          - inputRequired:
              inputRequests:
                user_name: %(ask)s
      - steps:
          - task:
              phases: [{polls: 1}]
              outcome:
                - text: "Hello {{ inputResponses.user_name.content.name }}"
""" % {"ask": json.dumps(ELICIT)}


CAPS = {"elicitation": {"form": {}}, **EXT}  # the exchange asks an elicitation


def _scenario(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def _answer(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


def _composed_task(core: Core, tool: str, **arguments: Any) -> str:
    """The two rounds: input_required, then the retry with the answer that makes the task."""
    first = core.call(tool, CAPS, **arguments)["result"]
    assert first["resultType"] == "input_required" and "user_name" in first["inputRequests"], first
    retry = core.ask("tools/call", {
        "name": tool, "arguments": arguments, "requestState": first["requestState"],
        "inputResponses": {"user_name": _answer("Alice")},
    }, CAPS)["result"]
    assert retry["resultType"] == "task" and "requestState" not in retry and "inputRequests" not in retry, retry
    return str(retry["taskId"])


def test_a_task_made_by_the_last_round_of_an_exchange_renders_with_its_answers(tmp_path: Path) -> None:
    core = Core(_scenario(tmp_path, COMPOSED))
    tid = _composed_task(core, "once")
    assert core.get(tid)["result"]["status"] == "working"
    done = core.get(tid)["result"]
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Hello Alice", done


def test_the_exchange_answers_do_not_answer_the_tasks_own_input_keys(tmp_path: Path) -> None:
    """The task asks under a key the exchange used too: the task's keys are its own (asked, and the
    task's answer is the one its outcome sees, the later one)."""
    core = Core(_scenario(tmp_path, COMPOSED))
    tid = _composed_task(core, "hello", who="x")
    assert core.get(tid)["result"]["status"] == "working"
    asked = core.get(tid)["result"]
    assert asked["status"] == "input_required" and list(asked["inputRequests"]) == ["user_name"], asked
    ack = core.ask("tasks/update", {"taskId": tid, "inputResponses": {"user_name": _answer("Bob")}})
    assert ack["result"]["resultType"] == "complete"
    done = core.get(tid)["result"]
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Hello x / Bob (round 2)", done


def test_the_creating_round_goes_with_the_record_and_older_records_still_load(tmp_path: Path) -> None:
    core = Core(_scenario(tmp_path, COMPOSED))
    tid = _composed_task(core, "once")
    table = core.engine.tasks
    rec = table.get(tid)
    assert rec is not None and rec.creating_round is not None
    stored = json.loads(json.dumps(rec.to_json()))
    assert stored["creating_round"]["round"] == 2 and stored["creating_round"]["inputResponses"] == {"user_name": _answer("Alice")}
    again = TaskRecord.from_json(stored, tid, len(table.specs))
    assert again.creating_round == rec.creating_round
    older = {k: v for k, v in stored.items() if k != "creating_round"}  # written before the field existed
    assert TaskRecord.from_json(older, tid, len(table.specs)).creating_round is None
    with pytest.raises(CorruptRecord, match="creating_round"):
        TaskRecord.from_json({**stored, "creating_round": {"round": "2"}}, tid, len(table.specs))


def test_a_task_made_by_a_first_round_keeps_no_exchange() -> None:
    core = Core()
    tid = core.start("build", target="x")
    rec = core.engine.tasks.get(tid)
    assert rec is not None and rec.creating_round is None and "creating_round" in rec.to_json()


# ---------------------------------------------------------------- SEP-2663: what each status means


def test_a_tool_error_is_a_completed_task_whose_result_has_is_error() -> None:
    core = Core("conformance-server")
    tid = core.start("failing_job")
    core.now += 1.0
    done = core.get(tid)["result"]
    assert done["status"] == "completed" and done["result"]["isError"] is True and "error" not in done, done


def test_a_protocol_error_is_a_failed_task_with_the_json_rpc_error_inlined_and_said() -> None:
    core = Core("conformance-server")
    tid = core.start("protocol_error_job")
    failed = core.get(tid)["result"]
    assert failed["status"] == "failed" and "result" not in failed, failed
    assert failed["error"] == {"code": -32603, "message": "Internal error in the job"}
    assert failed["statusMessage"] == "Internal error in the job"  # (SHOULD: what went wrong)
    doomed = Core()  # a scenario's own statusMessage stays
    tid = doomed.start("doomed")
    looks = [doomed.get(tid)["result"] for _ in range(3)]
    assert looks[-1]["status"] == "failed" and looks[-1]["statusMessage"] == "trying"


def test_tasks_cancel_is_acknowledged_empty_and_ends_the_task_cancelled() -> None:
    core = Core()
    tid = core.start("forever")
    ack = core.ask("tasks/cancel", {"taskId": tid})["result"]
    assert set(ack) <= {"resultType", "_meta"} and ack["resultType"] == "complete"
    cancelled = core.get(tid)["result"]
    assert cancelled["status"] == "cancelled" and not {"result", "error", "inputRequests"} & set(cancelled)
    assert core.ask("tasks/cancel", {"taskId": tid})["result"]["resultType"] == "complete"  # idempotent
    assert core.get(tid)["result"]["status"] == "cancelled"


def test_cancel_ignore_is_the_cooperative_server_that_goes_on(tmp_path: Path) -> None:
    core = Core(_scenario(tmp_path, "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps:\n          - task: {cancel: ignore, phases: [{polls: 2}]}\n"))
    tid = core.start("t")
    assert core.ask("tasks/cancel", {"taskId": tid})["result"]["resultType"] == "complete"
    assert [core.get(tid)["result"]["status"] for _ in range(3)] == ["working", "working", "completed"]


def test_a_task_handle_is_only_returned_once_tasks_get_finds_it() -> None:
    """Durable creation: the task is in the table before its CreateTaskResult is planned, so a
    tasks/get right after it (no time passed) resolves; a task that ends at once is still found."""
    core = Core("conformance-server")
    for args in ({"seconds": 60}, {"seconds": 0}):
        created = core.call("slow_compute", **args)["result"]
        assert created["resultType"] == "task"
        got = core.get(created["taskId"])["result"]
        assert got["taskId"] == created["taskId"] and got["createdAt"] == created["createdAt"]
