"""Session directories: state that outlives a process, shared by processes, judged as one session.

Through the real process: a client kills the mock and restarts it and the
task goes on (polls counted on, a timed phase on its clock); processes at once
lose no update; a directory that cannot be used is refused at start-up and
left as it was; ``mockmcp report DIR`` gives one verdict over all processes.
In-process: the log's compaction, seen by a second store on the same directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.process import run_mock
from support.engines import scenario_engine, session_engine
from support.taskclient import TaskClient

from mockmcp.sessiondir import layout
from mockmcp.sessiondir.connection import SessionConnection
from mockmcp.sessiondir.layout import SessionError
from mockmcp.sessiondir.store import SessionStore
from mockmcp.verify.report import SavedVerdict


def _snapshot(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def test_a_killed_and_restarted_mock_resumes_the_same_tasks(tmp_path: Path) -> None:
    session = str(tmp_path / "s")
    first = TaskClient("tasks", "--session", session, time_scale=0.5)
    deploy = first.call("deploy")["result"]["taskId"]  # working for 2 s x 0.5, on its clock
    build = first.call("build")["result"]["taskId"]  # three polls, then completed
    assert first.get(build)["result"]["status"] == "working"  # poll 1
    started = time.monotonic()
    first.proc.send_signal(signal.SIGKILL)
    first.kill()

    second = TaskClient("tasks", "--session", session, time_scale=0.5, start_id=1)  # ids start over, as after a restart
    try:
        assert [second.get(build)["result"]["status"] for _ in range(3)] == ["working", "working", "completed"]
        assert second.get(build)["result"]["result"]["content"][0]["text"] == "built all"
        if time.monotonic() - started < 0.9:
            assert second.get(deploy)["result"]["status"] == "working"
        time.sleep(max(0.0, 1.05 - (time.monotonic() - started)))
        done = second.get(deploy)["result"]
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "deployed"
        # created by the first process, completed on the clock it kept
        assert done["createdAt"] < done["lastUpdatedAt"]
        assert second.get("not-a-task")["error"]["code"] == -32602
    finally:
        assert second.close() == 0


def test_without_a_session_a_restarted_mock_starts_over(tmp_path: Path) -> None:
    first = TaskClient("tasks")
    tid = first.call("build")["result"]["taskId"]
    first.kill()
    second = TaskClient("tasks")
    try:
        assert second.get(tid)["error"]["code"] == -32602
    finally:
        second.close()


def test_processes_at_once_lose_no_update(tmp_path: Path) -> None:
    session = str(tmp_path / "s")
    processes, calls = 4, 40
    TaskClient("tasks", "--session", session).close()  # create the directory first
    errors: list[BaseException] = []

    def work() -> None:
        client = TaskClient("tasks", "--session", session)
        try:
            for _ in range(calls):
                assert client.call("build")["result"]["resultType"] == "task"
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=work) for _ in range(processes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    lines = (tmp_path / "s" / "state.log").read_text().splitlines()
    tasks = {line.split(" ", 2)[1] for line in lines if line.startswith("T ")}
    state = json.loads([line for line in lines if line.startswith("E ")][-1][2:])
    assert len(tasks) == processes * calls
    assert state["serial"] == processes * calls
    assert state["counters"] == {"0": [processes * calls, 0]}  # the build rule matched every call


@pytest.mark.parametrize(
    "prepare, message",
    [
        (lambda d: (d.mkdir(), (d / "VERSION").write_text("mockmcp session 99\n")), "written by another mockmcp version"),
        (lambda d: (d.mkdir(), (d / "notes.txt").write_text("mine\n")), "not a mockmcp session directory"),
        (lambda d: d.write_text("a file\n"), "cannot use as a session directory"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT), (d / "session.json").write_text("{nope")), "session.json: unreadable or corrupt"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"})),
                    (d / "state.log").write_bytes(b"T x {\"a\"\nZ garbage\n")), "state.log: corrupt"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"})),
                    (d / "state.log").write_bytes(b'E {"state":5,"counters":{},"serial":1}\n')), "state.log: corrupt (1 unreadable"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"})),
                    (d / "state.log").write_bytes(b'E {"state":"start","counters":{"-1":[1,0]},"serial":1}\n')), "state.log: corrupt (1 unreadable"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"})),
                    (d / "state.log").write_bytes(b'T abc {"id":"abc","spec"\n')), "state.log: corrupt (1 unreadable"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"})),
                    (d / "state.log").mkdir()), "state.log: is a folder, not a regular file"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "default"}))), "belongs to scenario 'default'"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text("mockmcp session 1\n"),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"})),
                    (d / "state.log").write_bytes(b'E {"state":"start","counters":{},"serial":0}\n')), "written by another mockmcp version"),
        (lambda d: (d.mkdir(), (d / "VERSION").write_text(layout.MARKER_TEXT),
                    (d / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"})),
                    (d / "ended.log").write_bytes(b'D abc {"id":"abc"}\n')), "ended.log: corrupt"),
    ],
    ids=["other-version", "not-a-session", "a-file", "corrupt-meta", "corrupt-log", "state-of-wrong-type",
         "counter-of-no-rule", "truncated-record", "log-is-a-folder", "other-scenario", "format-1", "archive-head"],
)
def test_an_unusable_session_directory_is_refused_at_start_up_and_left_alone(tmp_path: Path, prepare: Any, message: str) -> None:
    d = tmp_path / "s"
    prepare(d)
    before = _snapshot(d) if d.is_dir() else d.read_bytes()
    proc = run_mock("run", "tasks", "--session", str(d), input=b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}\n')
    assert proc.returncode == 2
    assert message in proc.stderr.decode() and proc.stdout == b""
    after = _snapshot(d) if d.is_dir() else d.read_bytes()
    if isinstance(after, dict) and isinstance(before, dict) and "lock" not in before:
        after.pop("lock", None)  # the lock is taken to read the log; nothing else is touched
    assert after == before


def test_journal_and_session_together_are_a_usage_error(tmp_path: Path) -> None:
    proc = run_mock("run", "tasks", "--session", str(tmp_path / "s"), "--journal", str(tmp_path / "j"))
    assert proc.returncode == 2 and b"--journal cannot be combined with --session" in proc.stderr


def test_compaction_keeps_what_is_live_and_other_processes_follow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "COMPACT_MIN", 2000)
    a = SessionStore(str(tmp_path), "tasks", SavedVerdict())
    b = SessionStore(str(tmp_path), "tasks", SavedVerdict())
    a_engine = session_engine("tasks", a, state_key=b"a", clock=lambda: 1e9)
    b_engine = session_engine("tasks", b, state_key=b"b", clock=lambda: 1e9)
    from support.messages import line, request
    from mockmcp.core.connection import Connection

    ext = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    conns = [SessionConnection(Connection(e), s) for e, s in ((a_engine, a), (b_engine, b))]

    def send(i: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        (plan,) = conns[i].receive_data(line(request(1, method, params, ext)))
        return plan.actions[0].message  # type: ignore[no-any-return]

    tid = send(0, "tools/call", {"name": "build"})["result"]["taskId"]
    inodes = set()
    statuses = []
    for n in range(40):  # every poll rewrites the record: the log grows mostly dead
        statuses.append(send(n % 2, "tasks/get", {"taskId": tid})["result"]["status"])
        inodes.add(os.stat(tmp_path / "state.log").st_ino)
    assert statuses[:4] == ["working", "working", "working", "completed"] and set(statuses[4:]) == {"completed"}
    assert len(inodes) > 1  # it was compacted, more than once
    assert (tmp_path / "state.log").stat().st_size < 4 * 2000
    assert b_engine.tasks.get(tid).total_polls == 40


def test_one_verdict_per_session_and_per_process_verdicts(tmp_path: Path) -> None:
    scenario = tmp_path / "two.yaml"
    scenario.write_text(
        "mockmcp: 1\ntools:\n  - name: echo\nexpectations:\n  - {method: tools/call, name: echo, atLeast: 2}\n"
    )
    session = str(tmp_path / "s")
    for _ in range(2):  # one call per process: neither process alone meets the expectation
        client = TaskClient(str(scenario), "--session", session, "--report", str(tmp_path / "r.json"))
        assert "result" in client.call("echo")
        client.close()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["ok"] and report["counts"]["expectations"] == {"passed": 1, "failed": 0} and len(report["processes"]) == 2
    proc = run_mock("report", session, "--per-process", "--json")
    assert proc.returncode == 0, proc.stderr
    judged = json.loads(proc.stdout)
    assert judged["ok"] and judged["expectations"][0]["count"] == 2
    assert [p["ok"] for p in judged["perProcess"].values()] == [False, False]
    human = run_mock("report", session)
    assert human.returncode == 0 and b"2 process(es)" in human.stdout and b"-> ok" in human.stdout
    assert run_mock("report", str(tmp_path / "nothing")).returncode == 2


def test_a_corrupt_task_record_is_an_error_for_that_task_and_is_left_as_it_is(tmp_path: Path) -> None:
    """Start-up reads no record (10,000 ended tasks would cost every spawn): one that does not
    fit is found when the task is asked for, answered -32603, and never rewritten or dropped."""
    from support.messages import line, request
    from mockmcp.core.connection import Connection

    store = SessionStore(str(tmp_path), "tasks", SavedVerdict())
    engine = session_engine("tasks", store, state_key=b"a", clock=lambda: 1e9)
    ext = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    conn = SessionConnection(Connection(engine), store)

    def send(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        (plan,) = conn.receive_data(line(request(rid, method, params, ext)))
        return plan.actions[0].message  # type: ignore[no-any-return]

    good = send(1, "tools/call", {"name": "build"})["result"]["taskId"]
    log = tmp_path / "state.log"
    with log.open("a") as fh:
        fh.write('T bad1 {"id":"bad1","spec":0}\n')  # fields missing
        fh.write('T bad2 {"id":"other","spec":0}\n')  # another id
    before = log.read_bytes()
    fresh = SessionStore(str(tmp_path), "tasks", SavedVerdict())
    fresh.check(scenario_engine("tasks", state_key=b"b", clock=lambda: 1e9))  # start-up accepts it
    for rid, tid in ((2, "bad1"), (3, "bad2")):
        error = send(rid, "tasks/get", {"taskId": tid})["error"]
        assert error["code"] == -32603 and f"record of task {tid} is corrupt" in error["message"]
    listen = send(4, "subscriptions/listen", {"notifications": {"taskIds": ["bad1", good]}})
    assert listen["params"]["notifications"]["taskIds"] == [good]  # not agreed to for a record it cannot read
    assert send(5, "tasks/get", {"taskId": good})["result"]["status"] == "working"
    assert log.read_bytes().startswith(before) and b"bad1" not in log.read_bytes()[len(before):]


def test_processes_started_at_once_on_a_new_directory_all_start(tmp_path: Path) -> None:
    """The first ones make the session under the lock; none sees it half made and refuses it."""
    import subprocess

    from support.messages import META

    from support.process import mockmcp_cmd

    session = str(tmp_path / "s")
    line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}) + "\n").encode()
    procs = []
    for _ in range(8):  # staggered a little: some list the directory while another is making it
        procs.append(subprocess.Popen(mockmcp_cmd("run", "tasks", "--session", session), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        time.sleep(0.004)
    outs = [p.communicate(line, timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err.decode()[-300:] for _, err in outs]
    assert all(b'"supportedVersions"' in out for out, _ in outs)


def test_a_half_made_session_is_finished_and_a_foreign_one_refused(tmp_path: Path) -> None:
    half = tmp_path / "half"
    half.mkdir()
    (half / "session.json").write_text(json.dumps({"mockmcp": 1, "scenario": "tasks"}))  # its maker died here
    (half / ".VERSION.123.tmp").write_text("mockmcp session 1\n")
    SessionStore(str(half), "tasks", SavedVerdict())
    assert (half / "VERSION").read_text() == layout.MARKER_TEXT
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "session.json").write_text('{"mine": true}')
    with pytest.raises(SessionError, match="not a mockmcp session directory"):
        SessionStore(str(foreign), "tasks", SavedVerdict())
    assert (foreign / "session.json").read_text() == '{"mine": true}' and not (foreign / "VERSION").exists()


def test_a_lone_surrogate_a_client_sent_is_kept_by_the_session_and_read_back(tmp_path: Path) -> None:
    """JSON lets a client send ``\\ud800``; a task's arguments (and so its result) keep it in the
    session's state log. Before, writing that log raised UnicodeEncodeError: the mock died."""
    session = str(tmp_path / "s")
    first = TaskClient("tasks", "--session", session, time_scale=0.5)
    build = first.call("build", target="\ud800é")["result"]["taskId"]
    assert first.close() == 0
    second = TaskClient("tasks", "--session", session, time_scale=0.5, start_id=10)
    try:
        statuses = [second.get(build)["result"] for _ in range(4)]  # (completed at its fourth poll)
        assert statuses[-1]["status"] == "completed", statuses
        assert statuses[-1]["result"]["content"][0]["text"] == "built \ud800é"  # (read back as it was sent)
    finally:
        assert second.close() == 0
