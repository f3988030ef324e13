"""Driving tasks of the Tasks extension from the control channel (a task's status changed from the test).

The core tests feed a real ``Connection`` (the MCP side, the bundled ``tasks``
scenario) and a ``Control`` over the same engine, as ``test_control_core`` does:
a task made by a real ``tools/call`` is put in each status from the control side,
and ``tasks/get`` and the listen stream that asked for the task show it, with the
extension's rules kept (payload by status, no way out of a terminal status unless
forced, input keys unique over the task's life).
"""

from __future__ import annotations

import json
from typing import Any

from support.messages import META, request
from support.paths import SCENARIOS
from support.controlcore import Rig

from mockmcp.core.control import NOT_FOUND

EXT = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}}
SCENARIO = (SCENARIOS / "tasks.yaml").read_text()
ELICIT = {"method": "elicitation/create", "params": {"mode": "form", "message": "Go on with {{ arguments.target }}?",
                                                     "requestedSchema": {"type": "object", "properties": {}}}}


def tasks_rig() -> tuple[Rig, str, int]:
    """A rig with one ``forever`` task made by the client, and a stream listening for it."""
    rig = Rig(SCENARIO)
    (created,) = rig.mcp(request(1, "tools/call", {"name": "forever", "arguments": {"target": "lib"}}, WITH_TASKS))
    tid = created["result"]["taskId"]
    (ack,) = rig.mcp(request(2, "subscriptions/listen", {"notifications": {"taskIds": [tid]}}, WITH_TASKS))
    assert ack["params"]["notifications"]["taskIds"] == [tid]
    return rig, tid, 2


def get(rig: Rig, rid: int, tid: str) -> dict[str, Any]:
    (answer,) = rig.mcp(request(rid, "tasks/get", {"taskId": tid}, WITH_TASKS))
    result: dict[str, Any] = answer["result"]
    return result


def notes(out: Any) -> list[dict[str, Any]]:
    return [json.loads(s.data) for s in out.sends]


def test_each_status_reaches_tasks_get_and_the_listen_stream():
    rig, tid, sub = tasks_rig()
    assert get(rig, 3, tid)["status"] == "working"

    out = rig.ctl("setTask", taskId=tid, status="input_required", statusMessage="need a yes", inputRequests={"go": ELICIT})
    assert out.response is not None and out.response["result"]["previous"] == "working", out.response
    (note,) = notes(out)
    assert note["method"] == "notifications/tasks" and note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub
    assert note["params"]["status"] == "input_required" and note["params"]["statusMessage"] == "need a yes"
    assert note["params"]["inputRequests"]["go"]["params"]["message"] == "Go on with lib?"  # templates see the call
    seen = get(rig, 4, tid)
    assert seen["status"] == "input_required" and list(seen["inputRequests"]) == ["go"]

    # the client answers through tasks/update: every input in, the driven task works on
    answer = {"go": {"action": "accept", "content": {}}}
    (ack, note) = rig.mcp(request(5, "tasks/update", {"taskId": tid, "inputResponses": answer}, WITH_TASKS))
    assert ack["result"] == {"resultType": "complete"} or "resultType" in ack["result"]
    assert note["params"]["status"] == "working"
    assert get(rig, 6, tid)["status"] == "working"

    out = rig.ctl("setTask", taskId=tid, status="working", statusMessage="half way", pollIntervalMs=250)
    assert notes(out)[0]["params"]["statusMessage"] == "half way" and get(rig, 7, tid)["pollIntervalMs"] == 250

    result = {"content": [{"type": "text", "text": "built {{ arguments.target }}"}]}
    out = rig.ctl("setTask", taskId=tid, status="completed", result=result)
    (note,) = notes(out)
    assert note["params"]["status"] == "completed" and note["params"]["result"]["content"][0]["text"] == "built lib"
    done = get(rig, 8, tid)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "built lib"

    # a terminal status never changes ...
    err = rig.error("setTask", taskId=tid, status="working")
    assert err["code"] == -32602 and "terminal" in err["message"] and err["data"]["status"] == "completed"
    assert get(rig, 9, tid)["status"] == "completed"
    # ... unless forced, as a deliberate fault
    out = rig.ctl("setTask", taskId=tid, status="failed", error={"code": -32603, "message": "it broke after all"}, force=True)
    assert notes(out)[0]["params"]["error"] == {"code": -32603, "message": "it broke after all"}
    assert get(rig, 10, tid)["status"] == "failed"


def test_failed_and_cancelled_and_a_quiet_change():
    rig, tid, _ = tasks_rig()
    out = rig.ctl("setTask", taskId=tid, status="working", statusMessage="quietly", notify=False)
    assert out.sends == [] and out.response is not None and out.response["result"]["delivered"] == 0
    assert get(rig, 3, tid)["statusMessage"] == "quietly"
    out = rig.ctl("setTask", taskId=tid, status="cancelled", statusMessage="stopped by the test")
    assert notes(out)[0]["params"]["status"] == "cancelled" and "result" not in notes(out)[0]["params"]

    rig2, tid2, _ = tasks_rig()
    out = rig2.ctl("setTask", taskId=tid2, status="failed", error={"code": -32000})
    err = notes(out)[0]["params"]["error"]
    assert err["code"] == -32000 and err["message"]  # the standard message, as an error step in a file gives


def test_a_driven_task_leaves_its_script():
    rig = Rig(SCENARIO)
    (created,) = rig.mcp(request(1, "tools/call", {"name": "build"}, WITH_TASKS))  # completes after three polls
    tid = created["result"]["taskId"]
    rig.ok("setTask", taskId=tid, status="working", statusMessage="held by the test")
    for rid in range(2, 8):
        assert get(rig, rid, tid)["status"] == "working"


def test_emit_resends_the_full_state_to_the_streams_that_asked():
    rig, tid, sub = tasks_rig()
    out = rig.ctl("emit", event="tasks", taskId=tid)
    assert out.response is not None and out.response["result"]["delivered"] == 1
    (note,) = notes(out)
    assert note["method"] == "notifications/tasks" and note["params"]["taskId"] == tid
    assert note["params"]["status"] == "working" and "createdAt" in note["params"] and "ttlMs" in note["params"]
    assert len(notes(rig.ctl("emit", event="tasks", taskId=tid))) == 1  # again: a repeat is what emit asks for
    # a stream that did not ask for this task hears nothing
    (other,) = rig.mcp(request(3, "tools/call", {"name": "forever"}, WITH_TASKS))
    assert notes(rig.ctl("emit", event="tasks", taskId=other["result"]["taskId"])) == []


def test_read_tasks_and_bad_task_operations():
    rig, tid, _ = tasks_rig()
    listed = rig.ok("listTasks")
    assert listed["tasks"] == [{"taskId": tid, "status": "working", "tool": "forever"}] and listed["total"] == 1
    assert rig.ok("getTask", taskId=tid)["task"]["status"] == "working"

    err = rig.error("setTask", taskId=tid[:-1], status="working")
    assert err["code"] == NOT_FOUND and err["data"] == {"taskId": tid[:-1]} and "did you mean" in err["message"]
    assert rig.error("emit", event="tasks", taskId="nope")["code"] == NOT_FOUND
    assert rig.error("getTask")["message"] == "Invalid params: missing 'taskId'"
    err = rig.error("setTask", taskId=tid, status="complete")
    assert "did you mean 'completed'" in err["message"]
    assert "needs 'inputRequests'" in rig.error("setTask", taskId=tid, status="input_required")["message"]
    assert "needs 'error'" in rig.error("setTask", taskId=tid, status="failed")["message"]
    assert "does not go with status working" in rig.error("setTask", taskId=tid, status="working", result={})["message"]

    # payloads are checked like a task step's phases and outcome in a file, located in the request
    err = rig.error("setTask", taskId=tid, status="input_required", inputRequests={"go": {"method": "elicitation/create"}})
    assert err["data"]["problems"][0]["path"] == "$.params.inputRequests.go", err
    err = rig.error("setTask", taskId=tid, status="completed", result={"content": "text"})
    assert err["data"]["problems"][0]["path"].startswith("$.params.result"), err
    err = rig.error("setTask", taskId=tid, status="failed", error={"code": "x"})
    assert err["data"]["problems"][0]["path"].startswith("$.params.error"), err
    err = rig.error("setTask", taskId=tid, status="working", pollIntervalMs=-1)
    assert err["data"]["problems"][0]["path"] == "$.params.pollIntervalMs", err

    # input keys are unique over a task's life
    rig.ok("setTask", taskId=tid, status="input_required", inputRequests={"go": ELICIT})
    rig.mcp(request(3, "tasks/update", {"taskId": tid, "inputResponses": {"go": {"action": "accept", "content": {}}}}, WITH_TASKS))
    err = rig.error("setTask", taskId=tid, status="input_required", inputRequests={"go": ELICIT})
    assert "answered before" in err["message"]
    rig.ok("setTask", taskId=tid, status="input_required", inputRequests={"go": ELICIT}, force=True)
    assert list(get(rig, 4, tid)["inputRequests"]) == ["go"]
    assert get(rig, 5, tid)["status"] == "input_required"
    # after all that, the MCP side answers as ever
    assert rig.mcp(request(6, "server/discover"))[0]["result"]["resultType"] == "complete"


# ---------------------------------------------------------------- through the real process

# The MCP side is a raw JSON-RPC client (mcp 2.3.0 has no Tasks support) on anyio's process
# streams, so one flow runs under trio (pytest-trio) and under asyncio (asyncio.run); the
# control side is ``MockServer``'s async API on whichever loop runs.


class RawClient:
    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.buffer = b""
        self.ids = 0

    async def write(self, method: str, params: dict[str, Any]) -> int:
        self.ids += 1
        params = {**params, "_meta": {**META, **WITH_TASKS}}
        await self.proc.stdin.send((json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}) + "\n").encode())
        return self.ids

    async def read(self) -> dict[str, Any]:
        import anyio

        with anyio.fail_after(20):
            while b"\n" not in self.buffer:
                self.buffer += await self.proc.stdout.receive()
        first, self.buffer = self.buffer.split(b"\n", 1)
        msg: dict[str, Any] = json.loads(first)
        return msg

    async def ask(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The answer, and the notifications read before it."""
        rid = await self.write(method, params)
        seen = []
        while True:
            msg = await self.read()
            if msg.get("id") == rid and "method" not in msg:
                return msg, seen
            seen.append(msg)


async def drive_a_task_through_the_real_process(mock: Any) -> None:
    import anyio

    from mockmcp.controlclient import ControlError

    async with await anyio.open_process(mock.argv) as proc:
        client = RawClient(proc)
        created, _ = await client.ask("tools/call", {"name": "forever", "arguments": {"target": "app"}})
        tid = created["result"]["taskId"]
        assert [t["taskId"] for t in await mock.list_tasks()] == [tid]
        sub = await client.write("subscriptions/listen", {"notifications": {"taskIds": [tid]}})
        assert (await client.read())["params"]["notifications"]["taskIds"] == [tid]

        task = await mock.require_input(tid, {"go": ELICIT}, message="need a yes")
        assert task["status"] == "input_required" and task["inputRequests"]["go"]["params"]["message"] == "Go on with app?"
        note = await client.read()  # the listen stream hears it, with no poll
        assert note["method"] == "notifications/tasks" and note["params"]["status"] == "input_required"
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub
        got, _ = await client.ask("tasks/get", {"taskId": tid})
        assert got["result"]["inputRequests"] == task["inputRequests"]
        _, heard = await client.ask("tasks/update", {"taskId": tid, "inputResponses": {"go": {"action": "accept", "content": {}}}})
        note = heard[0] if heard else await client.read()
        assert note["params"]["status"] == "working"

        await mock.complete_task(tid, {"content": [{"type": "text", "text": "done"}]})
        note = await client.read()
        assert note["params"]["status"] == "completed" and note["params"]["result"]["content"][0]["text"] == "done"
        got, _ = await client.ask("tasks/get", {"taskId": tid})
        assert got["result"]["status"] == "completed"

        try:
            await mock.set_task(tid, "working")
            raise AssertionError("a terminal status changed")
        except ControlError as exc:
            assert exc.code == -32602 and "terminal" in exc.message
        assert await mock.emit_task(tid) == 1
        note = await client.read()
        assert note["params"]["status"] == "completed" and note["params"]["taskId"] == tid
        assert (await mock.get_task(tid))["status"] == "completed"
        await proc.stdin.aclose()
        assert await proc.wait() == 0


async def test_a_task_driven_from_the_test_under_trio(tmp_path):
    from mockmcp.api import prepare

    await drive_a_task_through_the_real_process(prepare("tasks", tmp_path, control=True))


def test_a_task_driven_from_the_test_under_asyncio(tmp_path):
    import asyncio

    from mockmcp.api import prepare

    asyncio.run(drive_a_task_through_the_real_process(prepare("tasks", tmp_path, control=True)))


def test_set_task_from_the_sync_twin_and_the_ctl_command(tmp_path):
    import subprocess

    from support.process import mockmcp_cmd

    from mockmcp.api import prepare

    mock = prepare("tasks", tmp_path, control=True)
    proc = subprocess.Popen(mock.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        call = request(1, "tools/call", {"name": "forever"}, WITH_TASKS)
        proc.stdin.write((json.dumps(call) + "\n").encode())
        proc.stdin.flush()
        tid = json.loads(proc.stdout.readline())["result"]["taskId"]
        assert mock.sync.fail_task(tid, {"code": -32603, "message": "disk full"})["status"] == "failed"
        ctl = subprocess.run(mockmcp_cmd("ctl", str(mock.control_path), "getTask", f"taskId={tid}"), capture_output=True)
        assert ctl.returncode == 0 and json.loads(ctl.stdout)["result"]["task"]["error"]["message"] == "disk full"
        ctl = subprocess.run(mockmcp_cmd("ctl", str(mock.control_path), "setTask", f"taskId={tid}", "status=working"), capture_output=True)
        assert ctl.returncode == 1 and "terminal" in json.loads(ctl.stdout)["error"]["message"]
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=20) == 0


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_value = st.recursive(
    st.none() | st.booleans() | st.integers(-40000, 40000) | st.sampled_from(["", "x", "{{ arguments.target }}", "{{ nope.x }}", "text", "elicitation/create"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["content", "type", "text", "code", "message", "data", "method", "params", "requestedSchema", "go", "isError"]),
        inner, max_size=4),
    max_leaves=12,
)
_params = st.fixed_dictionaries({"status": st.sampled_from(["working", "input_required", "completed", "failed", "cancelled", "done", 3])}, optional={
    "statusMessage": _value, "result": _value, "error": _value, "inputRequests": _value, "pollIntervalMs": _value,
    "force": st.booleans() | _value, "notify": st.booleans(),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(_params, min_size=1, max_size=5))
def test_any_set_task_is_answered_and_the_task_stays_well_formed(changes):
    """Whatever ``setTask`` is sent, it is answered (never raised), and afterwards ``tasks/get``
    and the listen stream carry a task the extension allows (a known status with its payload)."""
    rig, tid, _ = tasks_rig()
    for rid, params in enumerate(changes, start=3):
        out = rig.ctl("setTask", taskId=tid, **params)
        assert out.response is not None and (("result" in out.response) != ("error" in out.response))
        for note in notes(out):
            assert note["method"] == "notifications/tasks"
        task = get(rig, 100 + rid, tid)
        assert task["status"] in ("working", "input_required", "completed", "failed", "cancelled")
        assert ("result" in task) == (task["status"] == "completed")
        assert ("error" in task) == (task["status"] == "failed")
        assert ("inputRequests" in task) == (task["status"] == "input_required")
    assert rig.mcp(request(999, "server/discover"))[0]["result"]["resultType"] == "complete"
