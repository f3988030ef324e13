"""The bundled ``tasks`` scenario through the real process, driven by the raw reference client.

One spawn drives every tool of the scenario the way a correct client of the
Tasks extension does (poll at the interval, answer input once, cancel, stop
at terminal), and checks each message against what the extension requires, and every message
the process wrote against the official schemas (its journal: ``support.schema``).
"""

from __future__ import annotations

from pathlib import Path

from support.schema import check_journal
from support.taskclient import TaskClient


def test_every_tool_of_the_tasks_scenario_through_the_real_process(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    client = TaskClient("tasks", "--journal", str(journal), time_scale=0.05)
    try:
        caps = client.ask("server/discover")["result"]["capabilities"]
        assert caps["extensions"] == {"io.modelcontextprotocol/tasks": {}}

        # build: three polls working, then the text
        created = client.call("build", target="lib")["result"]
        assert created["resultType"] == "task" and created["status"] == "working"
        seen = client.poll_until_terminal(created["taskId"], created["pollIntervalMs"])
        assert [r["status"] for r in seen] == ["working"] * 3 + ["completed"]
        assert all(r["resultType"] == "complete" for r in seen)
        assert seen[-1]["result"]["content"] == [{"type": "text", "text": "built lib"}]

        # approve: input_required until answered through tasks/update
        created = client.call("approve", change="schema v3")["result"]
        answers = {"approval": {"action": "accept", "content": {"approved": True}}}
        seen = client.poll_until_terminal(created["taskId"], created["pollIntervalMs"], answers=answers)
        statuses = [r["status"] for r in seen]
        assert statuses == ["working", "input_required", "working", "completed"]
        assert seen[1]["inputRequests"]["approval"]["params"]["message"] == "Approve schema v3?"
        assert seen[-1]["result"]["content"][0]["text"] == "schema v3: accept"

        # doomed: failed with the JSON-RPC error
        created = client.call("doomed")["result"]
        seen = client.poll_until_terminal(created["taskId"], created["pollIntervalMs"])
        assert seen[-1]["status"] == "failed" and seen[-1]["error"]["code"] == -32603

        # forever: only a cancel ends it
        tid = client.call("forever")["result"]["taskId"]
        assert client.get(tid)["result"]["status"] == "working"
        assert client.ask("tasks/cancel", {"taskId": tid})["result"]["resultType"] == "complete"
        assert client.get(tid)["result"]["status"] == "cancelled"

        # quick: synchronous for a client without the extension; a task with it
        plain = client.call("quick", caps={})["result"]
        assert plain["resultType"] == "complete" and plain["content"][0]["text"] == "quick result"
        assert client.call("quick")["result"]["resultType"] == "task"
        assert client.call("build", caps={})["error"]["code"] == -32021

        # deploy: a listen stream hears the timed completion without any poll
        tid = client.call("deploy")["result"]["taskId"]
        rid = client.write("subscriptions/listen", {"notifications": {"taskIds": [tid]}})
        ack = client.read()
        assert ack["method"] == "notifications/subscriptions/acknowledged" and ack["params"]["notifications"]["taskIds"] == [tid]
        note = client.read(timeout=20)
        assert note["method"] == "notifications/tasks" and note["params"]["status"] == "completed"
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == rid
        assert note["params"]["result"]["content"][0]["text"] == "deployed"

        # bad input never crashes the process
        assert client.ask("tasks/get", {"taskId": 42})["error"]["code"] == -32602
        assert client.ask("tasks/update", {"taskId": tid, "inputResponses": "x"})["error"]["code"] == -32602
        assert client.ask("server/discover")["result"]["resultType"] == "complete"
    finally:
        status = client.close()
    assert status == 0
    written = check_journal(journal)
    assert {m.get("method") for m in written} >= {"notifications/tasks"}
    assert sum(1 for m in written if m.get("result", {}).get("resultType") == "task") >= 6
