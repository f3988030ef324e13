"""``notifications/tasks`` pushed without a poll: changes by other processes of a session, and time.

A listen stream that asked for task notifications hears of every change to
its tasks when it happens: a change another process of the same session
directory made (a cancel, a poll that moved the task on, an input answer),
and a change time alone makes (a timed phase ending), with no request to
this process. Core level: the task table's ``notify_watchers`` on a fake
clock, and two session stores on one directory in this process (the
watcher's ``stat``, the pull under the lock, the wake-up, and that nothing
is polled while no stream watches tasks). Real process: two ``mockmcp run
tasks --session DIR`` processes, one listening, the other acting.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import trio
import trio.testing
from support.engines import GATED, scenario_engine, session_engine
from support.taskclient import TaskClient
from support.taskcore import TASKS_META, send_with_tasks, task_notes

from mockmcp.wire import protocol as p
from mockmcp.sessiondir.connection import SessionConnection
from mockmcp.sessiondir.store import SessionStore
from mockmcp.verify.report import SavedVerdict
from mockmcp.core.connection import Connection

FULL = {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _result(conn: Any, rid: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    (msg,) = [m for m in send_with_tasks(conn, rid, method, params) if m.get("id") == rid]
    return msg["result"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------- core: the task table

def test_notify_watchers_sends_each_new_state_once_with_the_full_task() -> None:
    clock = Clock()
    here, there = (scenario_engine("tasks", state_key=k, clock=clock) for k in (b"a", b"b"))
    conn_there = Connection(there)
    tid = _result(conn_there, 1, "tools/call", {"name": "forever"})["taskId"]
    here.tasks.load(tid, _json(there, tid))  # what the session store does with another process's line
    listen = send_with_tasks(Connection(here), 7, "subscriptions/listen", {"notifications": {"taskIds": [tid]}})
    assert listen[0]["params"]["notifications"]["taskIds"] == [tid]
    assert here.task_notifications() == []  # the stream saw this state when it opened

    _result(conn_there, 2, "tasks/cancel", {"taskId": tid})
    here.tasks.load(tid, _json(there, tid))
    (note,) = task_notes(here.task_notifications())
    assert note["status"] == "cancelled" and note["taskId"] == tid and FULL <= set(note)
    assert note["_meta"] == {p.META_SUBSCRIPTION_ID: 7}
    assert here.task_notifications() == []  # once per state


def test_notify_watchers_tells_states_apart_even_at_the_same_version() -> None:
    clock = Clock()
    here, there = (scenario_engine("tasks", state_key=k, clock=clock) for k in (b"a", b"b"))
    tid = _result(Connection(there), 1, "tools/call", {"name": "forever"})["taskId"]
    here.tasks.load(tid, _json(there, tid))
    send_with_tasks(Connection(here), 7, "subscriptions/listen", {"notifications": {"taskIds": [tid]}})
    rec = there.tasks.get(tid)
    rec.status, rec.message = "cancelled", "another process's view"  # same version, another state
    here.tasks.load(tid, _json(there, tid))
    assert [n["status"] for n in task_notes(here.task_notifications())] == ["cancelled"]


def test_notify_watchers_brings_timed_tasks_up_to_date_on_the_clock() -> None:
    clock = Clock()
    engine = scenario_engine("tasks", state_key=b"a", clock=clock)
    conn = Connection(engine)
    tid = _result(conn, 1, "tools/call", {"name": "deploy"})["taskId"]
    send_with_tasks(conn, 2, "subscriptions/listen", {"notifications": {"taskIds": [tid]}})
    clock.now += 1.9
    assert engine.task_notifications() == []
    clock.now += 0.2
    (note,) = task_notes(engine.task_notifications())
    assert note["status"] == "completed" and note["result"]["content"][0]["text"] == "deployed"
    engine.finished(2)  # the stream closed: nothing more for it, and nobody watches
    assert engine.tasks.watchers == {} and engine.task_notifications() == []


def _json(engine: Any, tid: str) -> str:
    import json

    return json.dumps(engine.tasks.get(tid).to_json())


# ---------------------------------------------------------------- core: two stores on one directory

def _pair(tmp_path: Path, clock: Clock, scenario: str = "tasks") -> tuple[Any, Any]:
    conns = []
    for key in (b"a", b"b"):
        store = SessionStore(str(tmp_path), "tasks", SavedVerdict())
        engine = session_engine(scenario, store, state_key=key, clock=clock)
        store.check(engine)
        conns.append(SessionConnection(Connection(engine), store))
    return conns[0], conns[1]


def test_a_store_notices_another_process_change_with_one_stat_and_wakes_its_streams(tmp_path: Path) -> None:
    here, there = _pair(tmp_path, Clock())
    tid = _result(there, 1, "tools/call", {"name": "approve", "arguments": {"change": "v3"}})["taskId"]
    send_with_tasks(here, 7, "subscriptions/listen", {"notifications": {"taskIds": [tid]}})
    assert not here.refresh()  # nothing new since its own read: no lock taken
    assert _result(there, 2, "tasks/get", {"taskId": tid})["status"] == "working"  # the poll ends "preparing"
    assert here.refresh() and here.engine.take_task_changes()
    (note,) = task_notes(here.engine.task_notifications())
    assert note["status"] == "input_required" and note["inputRequests"]["approval"]["params"]["message"] == "Approve v3?"
    assert note["_meta"][p.META_SUBSCRIPTION_ID] == 7
    _result(there, 3, "tasks/update", {"taskId": tid, "inputResponses": {"approval": {"action": "accept", "content": {"approved": True}}}})
    assert here.refresh() and here.engine.take_task_changes()
    assert [n["status"] for n in task_notes(here.engine.task_notifications())] == ["working"]
    assert not here.refresh() and not here.engine.take_task_changes()


def test_a_named_state_set_by_another_process_ends_a_phase_gated_on_it(tmp_path: Path) -> None:
    here, there = _pair(tmp_path, Clock(), GATED)
    tid = _result(there, 1, "tools/call", {"name": "gated"})["taskId"]
    send_with_tasks(here, 7, "subscriptions/listen", {"notifications": {"taskIds": [tid]}})
    assert not here.engine.take_task_changes()
    _result(there, 2, "tools/call", {"name": "release"})  # only the state changes (no task record)
    assert here.refresh() and here.engine.take_task_changes()  # the streams are woken
    (note,) = task_notes(here.engine.task_notifications())
    assert note["status"] == "completed" and note["result"]["content"][0]["text"] == "released"


def test_the_watcher_polls_only_while_a_stream_watches_tasks(tmp_path: Path) -> None:
    here, there = _pair(tmp_path, Clock())
    stats = []
    real = here._store.changed_on_disk

    def counted() -> bool:
        stats.append(trio.current_time())
        return real()

    here._store.changed_on_disk = counted
    woken = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            def wake() -> None:  # what the shells' wake does: take the change, then wake the streams
                if here.engine.take_task_changes():
                    woken.append(trio.current_time())

            nursery.start_soon(here.watch, wake)
            await trio.sleep(10)
            assert stats == []  # no stream watches tasks: not one stat in 10 s
            tid = _result(there, 1, "tools/call", {"name": "forever"})["taskId"]
            send_with_tasks(here, 7, "subscriptions/listen", {"notifications": {"taskIds": [tid]}})
            await trio.sleep(1)
            assert 15 <= len(stats) <= 21 and woken == []  # every 50 ms; nothing changed yet
            _result(there, 2, "tasks/cancel", {"taskId": tid})
            await trio.sleep(0.06)
            assert len(woken) == 1
            (note,) = task_notes(here.engine.task_notifications())
            assert note["status"] == "cancelled"
            here.engine.finished(7)  # the stream ended
            await trio.sleep(0.2)
            count = len(stats)
            await trio.sleep(10)
            assert len(stats) == count  # back to sleeping on the event
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


# ---------------------------------------------------------------- real processes

def _close(*clients: TaskClient) -> None:
    """Close each (stdin EOF), then check each exited with 0, its stderr in the message if not."""
    statuses = [c.close() for c in clients]
    assert statuses == [0] * len(clients), statuses


def _listen(client: TaskClient, tid: str) -> int:
    rid = client.write("subscriptions/listen", {"notifications": {"taskIds": [tid]}})
    ack = client.read()
    assert ack["method"] == "notifications/subscriptions/acknowledged" and ack["params"]["notifications"]["taskIds"] == [tid]
    return rid


def _note(client: TaskClient, bound: float = 15.0) -> dict[str, Any]:
    msg = client.read(timeout=bound)
    assert msg.get("method") == p.TASKS_NOTIFICATION, msg
    return msg["params"]  # type: ignore[no-any-return]


def test_a_change_by_another_process_reaches_this_process_listen_stream(tmp_path: Path) -> None:
    session = str(tmp_path / "s")
    a = TaskClient("tasks", "--session", session)
    b = TaskClient("tasks", "--session", session)
    try:
        approve = b.call("approve", change="v3")["result"]["taskId"]
        forever = b.call("forever")["result"]["taskId"]
        rid_a = _listen(a, approve)
        rid_f = _listen(a, forever)
        assert b.get(approve)["result"]["status"] == "working"  # B's poll moves the task to input_required
        note = _note(a)
        assert note["taskId"] == approve and note["status"] == "input_required" and FULL <= set(note)
        assert note["inputRequests"]["approval"]["method"] == "elicitation/create"
        assert note["_meta"][p.META_SUBSCRIPTION_ID] == rid_a
        started = time.monotonic()
        b.ask("tasks/cancel", {"taskId": forever})
        note = _note(a)
        latency = time.monotonic() - started
        assert note["taskId"] == forever and note["status"] == "cancelled" and note["_meta"][p.META_SUBSCRIPTION_ID] == rid_f
        assert note["statusMessage"] == "cancelled at the client's request" and FULL <= set(note)
        assert latency < 10.0, latency  # generous (a loaded machine): the watcher looks every 50 ms
        b.ask("tasks/update", {"taskId": approve, "inputResponses": {"approval": {"action": "decline"}}})
        note = _note(a)
        assert note["taskId"] == approve and note["status"] == "working"
        # and A answers its own requests as before, the streams still open
        assert a.get(forever)["result"]["status"] == "cancelled"
    finally:
        _close(b, a)


def test_a_timed_completion_is_pushed_with_no_request_to_either_process(tmp_path: Path) -> None:
    session = str(tmp_path / "s")
    a = TaskClient("tasks", "--session", session, time_scale=0.5)
    b = TaskClient("tasks", "--session", session, time_scale=0.5)
    try:
        tid = b.call("deploy")["result"]["taskId"]  # working for 2 s x 0.5, then completed
        rid = _listen(a, tid)
        note = _note(a)  # nothing more is sent to A or to B
        assert note["status"] == "completed" and note["result"]["content"][0]["text"] == "deployed"
        assert note["taskId"] == tid and note["_meta"][p.META_SUBSCRIPTION_ID] == rid and FULL <= set(note)
    finally:
        _close(b, a)


STAGED = """\
mockmcp: 1
tools:
  - name: staged
    replies:
      - steps:
          - task:
              pollIntervalMs: 50
              phases:
                - {statusMessage: queued, polls: 1}
                - {statusMessage: running, after: 800ms}
              outcome:
                - text: staged done
"""


def test_a_timed_phase_another_process_started_is_pushed_when_it_ends(tmp_path: Path) -> None:
    """B's poll starts a timed phase: A's stream hears of it, then of its end by time alone."""
    scenario = tmp_path / "staged.yaml"
    scenario.write_text(STAGED)
    session = str(tmp_path / "s")
    a = TaskClient(str(scenario), "--session", session)
    b = TaskClient(str(scenario), "--session", session)
    try:
        tid = b.call("staged")["result"]["taskId"]
        _listen(a, tid)  # waits with no deadline: a polls phase ends only by a poll
        assert b.get(tid)["result"]["statusMessage"] == "queued"  # the poll ends it
        running = _note(a)
        assert running["status"] == "working" and running["statusMessage"] == "running"
        done = _note(a)  # no request to A, none to B
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "staged done"
        assert done["lastUpdatedAt"] > running["lastUpdatedAt"]
    finally:
        _close(b, a)


def test_an_http_process_shares_the_session_and_its_stream_hears_the_other_process(tmp_path: Path) -> None:
    """Over HTTP each message is handled under the session's lock too, and the log is watched;
    the SSE stream also hears a timed completion with no request at all."""
    import json

    from support.httpmock import HttpMock, msg, read_events, sse_data

    session = str(tmp_path / "s")
    with HttpMock("tasks", "--session", session, "--time-scale", "0.25") as mock:
        b = TaskClient("tasks", "--session", session, time_scale=0.25)
        try:
            forever = mock.post(msg(1, "tools/call", {"name": "forever", "arguments": {}}, TASKS_META)).json()["result"]["taskId"]
            deploy = mock.post(msg(2, "tools/call", {"name": "deploy", "arguments": {}}, TASKS_META)).json()["result"]["taskId"]
            assert b.get(forever)["result"]["status"] == "working"  # the HTTP process's task, seen by B
            conn, resp = mock.stream(msg(3, "subscriptions/listen", {"notifications": {"taskIds": [forever, deploy]}}, TASKS_META))
            try:
                (ack,) = read_events(resp, 1)
                assert json.loads(sse_data(ack)[0])["params"]["notifications"]["taskIds"] == [forever, deploy]
                (event,) = read_events(resp, 1)  # deploy: 2 s x 0.25, then completed, no request
                note = json.loads(sse_data(event)[0])["params"]
                assert note["taskId"] == deploy and note["status"] == "completed"
                b.ask("tasks/cancel", {"taskId": forever})
                (event,) = read_events(resp, 1)
                note = json.loads(sse_data(event)[0])
                assert note["method"] == p.TASKS_NOTIFICATION and note["params"]["status"] == "cancelled"
                assert note["params"]["taskId"] == forever and FULL <= set(note["params"])
                assert note["params"]["_meta"][p.META_SUBSCRIPTION_ID] == 3
            finally:
                conn.close()
        finally:
            assert b.close() == 0
        assert mock.stop() == 0
