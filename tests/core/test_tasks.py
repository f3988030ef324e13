"""The Tasks extension in the core: the state machine on a fake clock, and the extension's rules.

Every test drives the real engine through a ``Connection`` (the one boundary),
with the clock handed in as a value the test moves, so time-scripted phases
are exact and cost no wall time. Streams (``notifications/tasks``) need the
shell, so those tests run on ``FakeLink`` with trio's mock clock as the
task clock.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from support.messages import line, request
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import GATED, scenario_engine
from support.taskcore import EXT, Core
from support.schema import checker

from mockmcp.wire import protocol as p
from mockmcp.core.actions import Send

ISO = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"


def test_discover_advertises_the_extension_only_when_the_scenario_has_tasks() -> None:
    assert Core().ask("server/discover")["result"]["capabilities"]["extensions"] == EXT["extensions"]
    assert "extensions" not in Core("default").ask("server/discover")["result"]["capabilities"]


def test_build_completes_after_three_polls_with_its_text() -> None:
    core = Core()
    created = core.call("build", target="app")["result"]
    assert created["resultType"] == "task" and created["status"] == "working"
    assert created["statusMessage"] == "compiling" and created["pollIntervalMs"] == 100 and created["ttlMs"] == 3_600_000
    tid = created["taskId"]
    for _ in range(3):
        got = core.get(tid)["result"]
        assert got["resultType"] == "complete" and got["status"] == "working" and "result" not in got
    done = core.get(tid)["result"]
    assert done["resultType"] == "complete" and done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "built app"}]
    assert done["taskId"] == tid and "inputRequests" not in done
    # terminal: it stays so
    assert core.get(tid)["result"]["status"] == "completed"


def test_create_task_result_has_the_task_fields(tmp_path: Any) -> None:
    import re

    created = Core().call("build")["result"]
    assert set(created) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
    assert re.match(ISO, created["createdAt"]) and created["createdAt"] == "2027-01-15T08:00:00.000Z"
    assert p.META_SERVER_INFO in created["_meta"]


def test_task_ids_are_unique_and_unguessable_shaped() -> None:
    core = Core()
    ids = {core.start("build") for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 36 and i.count("-") == 4 for i in ids)
    # another process draws another key: the same serials give other ids
    other = Core(key=b"another")
    assert not ids & {other.start("build") for _ in range(50)}


def test_approve_needs_an_answer_via_tasks_update_and_reasks_until_then() -> None:
    core = Core()
    tid = core.start("approve", change="v2")
    assert core.get(tid)["result"]["status"] == "working"  # preparing: one poll
    for _ in range(2):  # re-asked on every poll while unanswered
        got = core.get(tid)["result"]
        assert got["status"] == "input_required" and got["statusMessage"] == "waiting for approval"
        (key,) = got["inputRequests"]
        assert key == "approval" and got["inputRequests"][key]["method"] == "elicitation/create"
        assert got["inputRequests"][key]["params"]["message"] == "Approve v2?"
    ack = core.ask("tasks/update", {"taskId": tid, "inputResponses": {"approval": {"action": "accept", "content": {"approved": True}}}})
    assert ack["result"]["resultType"] == "complete" and set(ack["result"]) <= {"resultType", "_meta"}
    assert core.get(tid)["result"]["status"] == "working"  # applying: one poll
    done = core.get(tid)["result"]
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "v2: accept"


def test_update_ignores_keys_that_are_not_outstanding_and_keeps_waiting() -> None:
    core = Core()
    tid = core.start("approve")
    core.get(tid)
    assert core.get(tid)["result"]["status"] == "input_required"
    ack = core.ask("tasks/update", {"taskId": tid, "inputResponses": {"other": {"action": "accept"}}})
    assert "result" in ack
    assert core.get(tid)["result"]["status"] == "input_required"


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({}, "'taskId' missing"),
        ({"taskId": 7}, "'taskId' must be a string"),
        ({"taskId": "nope"}, "Task not found"),
    ],
)
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_bad_task_ids_are_invalid_params(method: str, params: dict[str, Any], fragment: str) -> None:
    core = Core()
    error = core.ask(method, {**params, "inputResponses": {}})["error"]
    assert error["code"] == -32602 and fragment in error["message"]


@pytest.mark.parametrize(
    "responses, fragment",
    [
        (None, "'inputResponses' missing"),
        ([1], "must be an object"),
        ({"approval": "yes"}, "not a valid answer"),
        ({"approval": {"action": "maybe"}}, "'action' must be accept"),
    ],
)
def test_update_with_wrong_shaped_responses_is_invalid_params(responses: Any, fragment: str) -> None:
    core = Core()
    tid = core.start("approve")
    core.get(tid)
    core.get(tid)
    params: dict[str, Any] = {"taskId": tid}
    if responses is not None:
        params["inputResponses"] = responses
    error = core.ask("tasks/update", params)["error"]
    assert error["code"] == -32602 and fragment in error["message"]
    assert core.get(tid)["result"]["status"] == "input_required"  # nothing was taken


def test_update_on_a_task_not_waiting_for_input_is_invalid_params() -> None:
    core = Core()
    tid = core.start("build")
    error = core.ask("tasks/update", {"taskId": tid, "inputResponses": {"x": {}}})["error"]
    assert error["code"] == -32602 and "not waiting for input" in error["message"] and error["data"]["status"] == "working"


def test_doomed_fails_with_its_json_rpc_error() -> None:
    core = Core()
    tid = core.start("doomed")
    assert [core.get(tid)["result"]["status"] for _ in range(2)] == ["working", "working"]
    failed = core.get(tid)["result"]
    assert failed["status"] == "failed" and failed["error"] == {"code": -32603, "message": "the job ran out of disk"}
    assert "result" not in failed


def test_forever_works_until_cancelled_and_cancel_is_acknowledged() -> None:
    core = Core()
    tid = core.start("forever")
    core.now += 10 * 365 * 86400  # ttlMs: null, no end of its own
    assert core.get(tid)["result"]["status"] == "working"
    ack = core.ask("tasks/cancel", {"taskId": tid})
    assert ack["result"]["resultType"] == "complete"
    assert core.get(tid)["result"]["status"] == "cancelled"
    # cancelling an ended task is acknowledged too, and changes nothing
    assert "result" in core.ask("tasks/cancel", {"taskId": tid})
    assert core.get(tid)["result"]["status"] == "cancelled"


@pytest.mark.parametrize(("tool", "polls", "status", "payload"), [
    ("build", 3, "completed", "result"),
    ("doomed", 2, "failed", "error"),
])
def test_cancel_of_an_ended_task_leaves_it_ended_with_its_outcome(tool: str, polls: int, status: str, payload: str) -> None:
    """``tasks/cancel`` ends an *unfinished* task: one already completed or failed is acknowledged
    and keeps its status and its result or error (``cancel: honour`` is the default)."""
    core = Core()
    tid = core.start(tool)
    for _ in range(polls):
        assert core.get(tid)["result"]["status"] == "working"
    ended = core.get(tid)["result"]
    assert ended["status"] == status and payload in ended
    ack = core.ask("tasks/cancel", {"taskId": tid})
    assert ack["result"]["resultType"] == "complete"
    after = core.get(tid)["result"]
    assert after["status"] == status, after
    assert after[payload] == ended[payload]


def test_cancel_ignored_when_scripted_so() -> None:
    core = Core(
        "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps:\n          - task: {cancel: ignore, phases: [{polls: 2}], outcome: [{text: ok}]}\n"
    )
    tid = core.start("t")
    assert "result" in core.ask("tasks/cancel", {"taskId": tid})
    statuses = [core.get(tid)["result"]["status"] for _ in range(3)]
    assert statuses == ["working", "working", "completed"]


def test_quick_answers_synchronously_without_the_capability_and_with_a_task_with_it() -> None:
    core = Core()
    plain = core.call("quick", caps={})["result"]
    assert plain["resultType"] == "complete" and plain["content"] == [{"type": "text", "text": "quick result"}]
    assert core.call("quick")["result"]["resultType"] == "task"


def test_a_task_is_never_returned_without_the_capability() -> None:
    core = Core()
    for caps in ({}, {"extensions": {}}, {"extensions": {p.TASKS_EXTENSION: True}}):
        error = core.call("build", caps=caps)["error"]
        assert error["code"] == -32021
        assert error["data"] == {"requiredCapabilities": {"extensions": {p.TASKS_EXTENSION: {}}}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_tasks_methods_need_the_client_capability(method: str) -> None:
    core = Core()
    tid = core.start("build")
    error = core.ask(method, {"taskId": tid, "inputResponses": {}}, caps={})["error"]
    assert error["code"] == -32021 and error["data"]["requiredCapabilities"] == EXT


def test_tasks_methods_are_not_found_on_a_server_without_the_extension() -> None:
    assert Core("default").ask("tasks/get", {"taskId": "x"})["error"]["code"] == -32601


def test_time_scripted_task_completes_on_the_clock_not_on_polls() -> None:
    core = Core()
    tid = core.start("deploy")
    core.now += 1.999
    assert core.get(tid)["result"]["status"] == "working"
    core.now += 0.001
    done = core.get(tid)["result"]
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "deployed"
    # it ended when the script said, not when it was polled
    assert done["lastUpdatedAt"] == "2027-01-15T08:00:02.000Z"


def test_time_scale_scales_phases() -> None:
    core = Core(time_scale=0.5)
    tid = core.start("deploy")
    core.now += 1.0
    assert core.get(tid)["result"]["status"] == "completed"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_an_expired_task_is_invalid_params(method: str) -> None:
    core = Core("mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps:\n          - task: {ttlMs: 1000}\n")
    tid = core.start("t")
    core.now += 1.0
    error = core.ask(method, {"taskId": tid, "inputResponses": {}})["error"]
    assert error["code"] == -32602 and "expired" in error["message"] and error["data"] == {"taskId": tid}


def test_state_scripted_phase_waits_for_the_named_state() -> None:
    core = Core(GATED)
    tid = core.start("gated")
    assert core.get(tid)["result"]["status"] == "working"
    core.call("release")
    assert core.get(tid)["result"]["status"] == "completed"


def test_input_keys_must_be_unique_over_the_task_life() -> None:
    from mockmcp.scenario.loader import load_text
    from mockmcp.scenario.problems import LoadError

    ask = {"k": {"method": "roots/list", "params": {}}}
    yaml = f"""mockmcp: 1
tools:
  - name: t
    replies:
      - steps:
          - task:
              phases:
                - {{status: input_required, inputRequests: {ask}}}
                - {{status: input_required, inputRequests: {ask}}}
"""
    with pytest.raises(LoadError, match="already used by phase 0"):
        load_text(yaml.replace("'", '"'), "<t>")


def test_task_step_outside_tools_call_is_refused_unless_deliberate() -> None:
    from mockmcp.scenario.loader import load_text
    from mockmcp.scenario.problems import LoadError

    yaml = "mockmcp: 1\nprompts:\n  - name: p\n    replies: [{steps: [{task: {}}]}]\n"
    with pytest.raises(LoadError, match="a task can only answer tools/call"):
        load_text(yaml, "<t>")
    deliberate = yaml.replace("{task: {}}", "{task: {faults: {anyMethod: true}}}")
    core = Core(deliberate, checked=False)  # (the fault breaks the extension on purpose)
    result = core.ask("prompts/get", {"name": "p"})["result"]
    assert result["resultType"] == "task"


def test_many_tasks_alive_at_once_each_keep_their_own_state() -> None:
    core = Core()
    ids = [core.start("build", target=str(i)) for i in range(200)]
    for _ in range(3):
        for tid in ids:
            assert core.get(tid)["result"]["status"] == "working"
    for i, tid in enumerate(ids):
        assert core.get(tid)["result"]["result"]["content"][0]["text"] == f"built {i}"


# ---------------------------------------------------------------- notifications/tasks (through the shell)


def _link(scenario: str = "tasks") -> FakeLink:
    return FakeLink(scenario_engine(scenario, state_key=b"k", seed=0, clock=trio.current_time))


def _req(rid: Any, method: str, params: dict[str, Any] | None = None, caps: Any = EXT) -> dict[str, Any]:
    return request(rid, method, params, {p.META_CLIENT_CAPABILITIES: caps})


def _send(link: FakeLink, message: dict[str, Any]) -> list[dict[str, Any]]:
    """What the shell wrote for ``message``, each message checked against the official schemas."""
    out: list[dict[str, Any]] = link.send(message)
    for written in out:
        checker().check(written, message["method"] if "id" in written else None)
    return out


def test_listen_stream_gets_a_notification_per_change_with_the_full_task() -> None:
    with _link() as link:
        (created,) = _send(link, _req(1, "tools/call", {"name": "approve", "arguments": {}}))
        tid = created["result"]["taskId"]
        (ack,) = _send(link, _req(2, "subscriptions/listen", {"notifications": {"taskIds": [tid, "unknown"]}}))
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"]["taskIds"] == [tid]
        out = _send(link, _req(3, "tasks/get", {"taskId": tid}))
        # the poll ended "preparing": the stream hears of input_required, with the requests
        (note,) = [m for m in out if m.get("method") == p.TASKS_NOTIFICATION]
        assert note["params"]["status"] == "input_required" and "approval" in note["params"]["inputRequests"]
        assert note["params"]["_meta"][p.META_SUBSCRIPTION_ID] == 2 and note["params"]["taskId"] == tid
        assert "resultType" not in note["params"]
        out = _send(link, _req(4, "tasks/update", {"taskId": tid, "inputResponses": {"approval": {"action": "decline"}}}))
        assert [m["params"]["status"] for m in out if m.get("method") == p.TASKS_NOTIFICATION] == ["working"]
        out = _send(link, _req(5, "tasks/get", {"taskId": tid}))
        notes = [m["params"] for m in out if m.get("method") == p.TASKS_NOTIFICATION]
        assert [n["status"] for n in notes] == ["completed"] and notes[0]["result"]["content"][0]["text"] == "the change: decline"
        assert 2 in link.open  # the stream stays open


def test_time_driven_change_is_pushed_at_its_moment_without_any_poll() -> None:
    with _link() as link:
        (created,) = _send(link, _req(1, "tools/call", {"name": "deploy", "arguments": {}}))
        tid = created["result"]["taskId"]
        before = len(link.timeline)
        out = _send(link, _req(2, "subscriptions/listen", {"notifications": {"taskIds": [tid]}}))
        notes = [m for m in out if m.get("method") == p.TASKS_NOTIFICATION]
        assert [n["params"]["status"] for n in notes] == ["completed"]
        at = [t for t, raw in link.timeline[before:] if b"notifications/tasks" in raw]
        assert at == [pytest.approx(2.0)]


def test_listen_for_tasks_without_the_capability_is_32021() -> None:
    with _link() as link:
        (err,) = _send(link, _req(1, "subscriptions/listen", {"notifications": {"taskIds": ["x"]}}, caps={}))
        assert err["error"]["code"] == -32021


def test_the_legacy_era_never_gets_a_task_whatever_it_declares(tmp_path: Any) -> None:
    """The extension is not defined under 2025-11-25: a legacy client that declares it is a client without it."""
    from pathlib import Path

    text = (Path(__file__).parents[2] / "scenarios" / "tasks.yaml").read_text()
    scenario = tmp_path / "dual.yaml"
    scenario.write_text(text.replace("mockmcp: 1\n", "mockmcp: 1\nprotocol: {era: dual, versions: ['2026-07-28', '2025-11-25']}\n", 1))
    core = Core(str(scenario))

    def legacy(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        (plan,) = core.conn.receive_data(line(msg))
        (answer,) = [a.message for a in plan.actions if isinstance(a, Send)]
        return answer

    init = legacy(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": EXT, "clientInfo": {"name": "old", "version": "1"}})
    assert "extensions" not in init["result"]["capabilities"]
    core.conn.receive_data(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    declared = {"_meta": {p.META_CLIENT_CAPABILITIES: EXT}}
    quick = legacy(2, "tools/call", {"name": "quick", "arguments": {}, **declared})["result"]
    assert quick["content"] == [{"type": "text", "text": "quick result"}] and "taskId" not in quick
    assert legacy(3, "tools/call", {"name": "build", "arguments": {}})["error"]["code"] == -32021
    assert legacy(4, "tasks/get", {"taskId": "x", **declared})["error"]["code"] == -32601


ASKS = """\
mockmcp: 1
tools:
  - name: ask
    replies:
      - steps:
          - task:
              pollIntervalMs: 10
              phases:
                - status: input_required
                  inputRequests:
                    draft: {method: sampling/createMessage, params: {messages: [{role: user, content: {type: text, text: hi}}], maxTokens: 10}}
                - status: input_required
                  inputRequests:
                    where: {method: roots/list, params: {}}
              outcome:
                - text: "{{ inputResponses.draft.model }} {{ inputResponses.where.roots.0.uri }}"
"""


@pytest.mark.parametrize(
    "key, bad, fragment",
    [
        ("draft", {"role": "robot", "model": "m", "content": {"type": "text", "text": "x"}}, "'role' must be user or assistant"),
        ("draft", {"role": "assistant", "content": {"type": "text", "text": "x"}}, "'model' must be a string"),
        ("where", {"roots": [{"name": "no uri"}]}, "'roots' must be a list of objects with a 'uri'"),
    ],
)
def test_sampling_and_roots_input_requests_are_answered_through_tasks_update(tmp_path: Any, key: str, bad: Any, fragment: str) -> None:
    scenario = tmp_path / "asks.yaml"
    scenario.write_text(ASKS)
    core = Core(str(scenario))
    tid = core.start("ask")
    draft = {"role": "assistant", "model": "m1", "content": {"type": "text", "text": "a draft"}}
    if key == "where":
        assert list(core.get(tid)["result"]["inputRequests"]) == ["draft"]
        assert core.ask("tasks/update", {"taskId": tid, "inputResponses": {"draft": draft}})["result"]["resultType"] == "complete"
    state = core.get(tid)["result"]
    assert state["status"] == "input_required" and list(state["inputRequests"]) == [key]
    error = core.ask("tasks/update", {"taskId": tid, "inputResponses": {key: bad}})["error"]
    assert error["code"] == -32602 and fragment in error["message"]
    assert list(core.get(tid)["result"]["inputRequests"]) == [key]  # re-asked: nothing was taken
    if key == "where":
        core.ask("tasks/update", {"taskId": tid, "inputResponses": {"where": {"roots": [{"uri": "file:///w"}]}}})
        done = core.get(tid)["result"]
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "m1 file:///w"




def test_a_named_state_change_is_pushed_to_streams_watching_a_task_gated_on_it() -> None:
    """No poll: the request that sets the state is what ends the task's phase."""
    with FakeLink(scenario_engine(GATED, state_key=b"k", seed=0, clock=trio.current_time)) as link:
        (created,) = _send(link, _req(1, "tools/call", {"name": "gated", "arguments": {}}))
        tid = created["result"]["taskId"]
        _send(link, _req(2, "subscriptions/listen", {"notifications": {"taskIds": [tid]}}))
        out = _send(link, _req(3, "tools/call", {"name": "release", "arguments": {}}))
        notes = [m["params"] for m in out if m.get("method") == p.TASKS_NOTIFICATION]
        assert [n["status"] for n in notes] == ["completed"] and notes[0]["result"]["content"][0]["text"] == "released"
