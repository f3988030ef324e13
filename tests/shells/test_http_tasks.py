"""The Tasks extension over Streamable HTTP: the bundled ``tasks``, ``tasks-faults`` and
``conformance-tasks`` scenarios served by the real ``mockmcp run --http 0`` process, driven by a
raw HTTP client (one POST per request, answers from JSON bodies or SSE streams).

One process per scenario serves every path of it: task creation, polling, input through
``tasks/update``, failure, ``tasks/cancel``, the synchronous answer without the capability,
bad task ids, ``notifications/tasks`` on a ``subscriptions/listen`` stream (after a poll or an
update changed the task, and on the task's own clock), the faults, and a session directory
kept across processes that die (scripted, and SIGKILL) and are restarted. Every message a
process that keeps to the extension wrote is checked against the official schemas (the revision's
and the extension's: its journal, ``support.schema``).
"""

from __future__ import annotations

import http.client
import json
import signal
import time
from pathlib import Path
from typing import Any, Iterator

from support.httpmock import HttpClient, HttpMock, read_events, sse_data
from support.schema import check_journal
from support.taskclient import walk_the_task_faults

SCALE = 0.05  # pollIntervalMs 100 -> 5 ms; deploy's 2 s -> 100 ms


def _events(resp: Any, timeout: float = 10) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of a live SSE response, keep-alive comments skipped."""
    for block in read_events(resp, 1000, timeout):
        for data in sse_data(block + b"\n\n"):
            yield json.loads(data)


def _poll(client: HttpClient, tid: str, answers: dict[str, Any] | None = None) -> list[str]:
    """Poll until a terminal status (answering input once), the statuses seen."""
    seen: list[str] = []
    for _ in range(40):
        state = client.get(tid)["result"]
        seen.append(state["status"])
        if state["status"] in ("completed", "failed", "cancelled"):
            return seen
        if state["status"] == "input_required" and answers and seen.count("input_required") == 1:
            ack = client.ask("tasks/update", {"taskId": tid, "inputResponses": answers})
            assert ack["result"]["resultType"] == "complete", ack
        time.sleep(state["pollIntervalMs"] / 1000 * SCALE)
    raise AssertionError(seen)


def test_every_path_of_the_tasks_scenario_over_http(tmp_path: Path) -> None:
    journal, report = tmp_path / "j.jsonl", tmp_path / "r.json"
    with HttpMock("tasks", "--time-scale", str(SCALE), "--journal", str(journal), "--report", str(report)) as mock:
        client = HttpClient(mock)
        discover = client.ask("server/discover")["result"]
        assert discover["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}

        # build: a task handle, three polls working, then the result
        created = client.call("build", target="lib")["result"]
        assert created["resultType"] == "task" and created["status"] == "working"
        assert _poll(client, created["taskId"]) == ["working"] * 3 + ["completed"]
        assert client.get(created["taskId"])["result"]["result"]["content"] == [{"type": "text", "text": "built lib"}]

        # approve, watched by a listen stream: each change a poll or tasks/update makes is a
        # notifications/tasks on that stream (not in the answer of the request that made it)
        tid = client.call("approve", change="schema v3")["result"]["taskId"]
        listen = client.message("subscriptions/listen", {"notifications": {"taskIds": [tid]}})
        conn, resp = mock.stream(listen)
        try:
            assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
            events = _events(resp)
            ack = next(events)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"] == {"taskIds": [tid]}
            before = len(client.notifications)
            answers = {"approval": {"action": "accept", "content": {"approved": True}}}
            assert _poll(client, tid, answers) == ["working", "input_required", "working", "completed"]
            assert len(client.notifications) == before, "no task notification rides on a tasks/get or tasks/update answer"
            heard = [next(events) for _ in range(3)]
            assert [e["params"]["status"] for e in heard] == ["input_required", "working", "completed"]
            assert all(e["method"] == "notifications/tasks" for e in heard)
            assert all(e["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen["id"] for e in heard)
            assert heard[-1]["params"]["result"]["content"][0]["text"] == "schema v3: accept"
        finally:
            conn.close()

        # deploy: timed, heard on a listen stream without any poll
        tid = client.call("deploy")["result"]["taskId"]
        listen = client.message("subscriptions/listen", {"notifications": {"taskIds": [tid]}})
        conn, resp = mock.stream(listen)
        try:
            events = _events(resp)
            assert next(events)["method"] == "notifications/subscriptions/acknowledged"
            done = next(events)
            assert done["method"] == "notifications/tasks" and done["params"]["status"] == "completed"
            assert done["params"]["result"]["content"][0]["text"] == "deployed"
        finally:
            conn.close()

        # doomed: failed, with the JSON-RPC error
        tid = client.call("doomed")["result"]["taskId"]
        assert _poll(client, tid)[-1] == "failed"
        assert client.get(tid)["result"]["error"]["code"] == -32603

        # forever: only tasks/cancel ends it
        tid = client.call("forever")["result"]["taskId"]
        assert client.get(tid)["result"]["status"] == "working"
        assert client.ask("tasks/cancel", {"taskId": tid})["result"]["resultType"] == "complete"
        assert client.get(tid)["result"]["status"] == "cancelled"

        # quick: a plain answer without the capability, a task with it; build needs it
        plain = client.call("quick", caps={})["result"]
        assert plain["resultType"] == "complete" and plain["content"][0]["text"] == "quick result"
        assert client.call("quick")["result"]["resultType"] == "task"
        refused = client.call("build", caps={})
        assert refused["error"]["code"] == -32021

        # bad task ids are client errors with their HTTP status; the process goes on
        for bad, code in (("not-a-task", -32602), (42, -32602)):
            m = client.message("tasks/get", {"taskId": bad})
            r = mock.post(m)
            assert r.status == 400 and r.json()["error"]["code"] == code, r
        r = mock.post(client.message("tasks/update", {"taskId": tid, "inputResponses": "x"}))
        assert r.status == 400 and r.json()["error"]["code"] == -32602
        r = mock.post(client.message("tasks/cancel", {"taskId": "not-a-task"}))
        assert r.status == 400 and r.json()["error"]["code"] == -32602
        assert client.ask("server/discover")["result"]["resultType"] == "complete"

        # the client checks of the extension judge HTTP requests too: polls after the end, an
        # answer to a key that is not outstanding
        tid = client.call("build")["result"]["taskId"]
        for _ in range(5):
            client.get(tid)
        client.ask("tasks/update", {"taskId": tid, "inputResponses": {"nothing": {"action": "accept"}}})
        assert mock.stop() == 0
    checks = {f["check"] for f in json.loads(report.read_text())["findings"]}
    assert {"tasks.poll.afterTerminal", "tasks.update.notOutstanding"} <= checks, checks
    written = check_journal(journal)
    tasks_notes = [m for m in written if m.get("method") == "notifications/tasks"]
    assert len(tasks_notes) == 4  # three for approve, one for deploy: journaled as written


def test_tasks_faults_over_http() -> None:
    with HttpMock("tasks-faults", "--time-scale", "0.5") as mock:
        client = HttpClient(mock)
        walk_the_task_faults(client)

        # hang_get: the second tasks/get never answers (an open stream); closing it cancels it
        tid = client.call("hang_get")["result"]["taskId"]
        assert client.get(tid)["result"]["status"] == "working"
        hung = client.message("tasks/get", {"taskId": tid})
        conn, resp = mock.stream(hung, {})
        assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
        assert client.ask("server/discover")["result"]["resultType"] == "complete"  # served meanwhile
        conn.close()
        again = client.message("tasks/get", {"taskId": tid})
        again["id"] = hung["id"]  # its id is free once the stream closed
        conn, resp = mock.stream(again)
        conn.close()
        assert mock.stop() == 0


def _conformance(tmp_path: Path, n: int) -> HttpMock:
    return HttpMock("conformance-tasks", "--time-scale", "0.25", "--session", str(tmp_path / "s"),
                    "--report", str(tmp_path / f"r{n}.json"))


def test_a_session_directory_outlives_http_processes(tmp_path: Path) -> None:
    """conformance-tasks kills the mock on the second poll; the client restarts it with the same
    session directory and polls the same taskId on, through a SIGKILL and another restart; the
    verdict covers every process."""
    mock = _conformance(tmp_path, 1)
    client = HttpClient(mock, start_id=100)
    created = client.call("job")["result"]
    tid, interval = created["taskId"], created["pollIntervalMs"] / 1000 * 0.25
    time.sleep(interval)
    assert client.get(tid)["result"]["status"] == "working"
    time.sleep(interval)
    try:
        got: Any = mock.post(client.message("tasks/get", {"taskId": tid}))
    except (http.client.HTTPException, OSError) as exc:  # the stream cut by the exit
        got = exc
    assert not hasattr(got, "status") or got.status != 200, got
    assert mock.proc.wait(10) == 1  # the scripted crash
    mock.__exit__()

    mock = _conformance(tmp_path, 2)  # restarted: polled on, then SIGKILLed mid-task
    assert HttpClient(mock, start_id=200).get(tid)["result"]["status"] in ("working", "input_required")
    mock.proc.send_signal(signal.SIGKILL)
    mock.proc.wait(10)
    mock.__exit__()

    with _conformance(tmp_path, 3) as mock:  # and restarted again: the same task goes on
        client = HttpClient(mock, start_id=300)
        statuses = []
        for _ in range(20):
            time.sleep(interval)
            state = client.get(tid)["result"]
            statuses.append(state["status"])
            if state["status"] == "completed":
                break
            if state["status"] == "input_required" and statuses.count("input_required") == 1:
                client.ask("tasks/update", {"taskId": tid, "inputResponses": {"go": {"action": "accept", "content": {"go": True}}}})
        assert statuses[-1] == "completed" and "input_required" in statuses, statuses
        assert state["result"]["content"][0]["text"] == "job done (accept)"
        assert mock.stop() == 0
    report = json.loads((tmp_path / "r3.json").read_text())
    assert report["ok"], report["expectations"]
    check_journal(tmp_path / "s" / "journal.jsonl")  # every process's, the killed ones' too
    assert len(report["processes"]) == 3  # one verdict over every process of the session


def test_a_client_that_calls_the_tool_again_after_the_restart_fails_over_http(tmp_path: Path) -> None:
    mock = _conformance(tmp_path, 1)
    client = HttpClient(mock, start_id=100)
    tid = client.call("job")["result"]["taskId"]
    for _ in range(3):  # the second poll kills the mock
        time.sleep(0.05)
        try:
            client.get(tid)
        except (http.client.HTTPException, OSError, AssertionError):
            break
    assert mock.proc.wait(10) == 1
    mock.__exit__()
    with _conformance(tmp_path, 2) as mock:
        client = HttpClient(mock, start_id=200)
        tid = client.call("job")["result"]["taskId"]  # wrong: the task outlived the process
        assert client.get(tid)["result"]["status"] == "working"
        assert mock.stop() == 0
    report = json.loads((tmp_path / "r2.json").read_text())
    failed = {v["expectation"] for v in report["expectations"] if v["verdict"] == "failed"}
    assert not report["ok"] and "started" in failed, report["expectations"]


def test_sep_2663_through_the_real_process(tmp_path: Path) -> None:
    """What each status means by default, with the conformance suite's own fixture tools: a tool
    error completes with isError, a protocol error fails with the error inlined, tasks/cancel ends a
    task cancelled, a task handle is found by the tasks/get right after it (in another process of the
    session too); every message checked against the extension's schema."""
    session = tmp_path / "s"
    with HttpMock("conformance-server", "--time-scale", "0.05", "--session", str(session)) as mock:
        client = HttpClient(mock)
        tid = client.call("failing_job")["result"]["taskId"]
        time.sleep(0.1)  # its 1 s x 0.05
        done = client.get(tid)["result"]
        assert done["status"] == "completed" and done["result"]["isError"] is True and "error" not in done

        failed = client.get(client.call("protocol_error_job")["result"]["taskId"])["result"]
        assert failed["status"] == "failed" and "result" not in failed
        assert failed["error"]["code"] == -32603 and type(failed["error"]["message"]) is str and failed["statusMessage"]

        tid = client.call("slow_compute", seconds=60)["result"]["taskId"]
        assert client.get(tid)["result"]["status"] == "working"  # found at once
        with HttpMock("conformance-server", "--session", str(session)) as other:  # and by another process
            assert HttpClient(other, start_id=500).get(tid)["result"]["taskId"] == tid
            assert other.stop() == 0
        ack = client.ask("tasks/cancel", {"taskId": tid})["result"]
        assert ack["resultType"] == "complete" and "status" not in ack
        assert client.get(tid)["result"]["status"] == "cancelled"
        assert mock.stop() == 0
    written = check_journal(session / "journal.jsonl")
    assert sum(1 for m in written if m.get("result", {}).get("resultType") == "task") == 3
