"""The session directory's archive of ended tasks (``ended.log``), in-process.

Compaction moves ended tasks out of ``state.log`` so a new process reads only
what is still going: the archive is a second place a record can be, so a
differential test runs the same random operations over processes sharing a
directory twice, once compacting at every change (the archive path) and once
never compacting (everything stays in the log, the plain path), and compares
every answer. The rest: start-up does not read the archive, a torn append is
cut off, a corrupt head is refused at start-up, the archive stays bounded.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from support.messages import line, request
from support.engines import scenario_engine, session_engine
from support.taskcore import send_with_tasks, task_notes

from mockmcp.sessiondir import archive, layout
from mockmcp.sessiondir.connection import SessionConnection
from mockmcp.sessiondir.layout import SessionError
from mockmcp.sessiondir.store import SessionStore
from mockmcp.verify.report import SavedVerdict
from mockmcp.core import tasks
from mockmcp.core.connection import Connection

EXT = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
TOOLS = ["build", "quick", "doomed", "forever", "approve"]


class Process:
    """One mock process on the directory: its own engine and store (the clock is shared and fixed)."""

    def __init__(self, directory: Path, clock: Any = None) -> None:
        self.store = SessionStore(str(directory), "tasks", SavedVerdict())
        self.engine = session_engine("tasks", self.store, state_key=b"k", clock=clock or (lambda: 1e9))
        self.store.check(self.engine)
        self.conn = SessionConnection(Connection(self.engine), self.store)
        self.rid = 0

    def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.rid += 1
        (plan,) = self.conn.receive_data(line(request(self.rid, method, params, EXT)))
        msg = dict(plan.actions[0].message)
        msg.pop("id", None)
        return msg


def _run(directory: Path, seed: int, steps: int) -> list[Any]:
    rng = random.Random(seed)
    procs = [Process(directory) for _ in range(3)]
    ids: list[str] = []
    out: list[Any] = []
    for n in range(steps):
        p = rng.choice(procs)
        what = rng.random()
        if what < 0.3 or not ids:
            msg = p.send("tools/call", {"name": rng.choice(TOOLS), "arguments": {}})
            tid = msg.get("result", {}).get("taskId")
            if tid:
                ids.append(tid)
        elif what < 0.85:
            msg = p.send("tasks/get", {"taskId": rng.choice(ids) if rng.random() < 0.95 else "no-such-task"})
        elif what < 0.95:
            msg = p.send("tasks/cancel", {"taskId": rng.choice(ids)})
        else:
            procs[procs.index(p)] = Process(directory)  # a restart: a new process, nothing in memory
            msg = {"restarted": n}
        out.append(msg)
    fresh = Process(directory)
    out.extend(fresh.send("tasks/get", {"taskId": tid}) for tid in ids)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_archiving_changes_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    monkeypatch.setattr(layout, "COMPACT_MIN", 1 << 40)
    plain = _run(tmp_path / "plain", seed, 160)
    assert not (tmp_path / "plain" / "ended.log").exists()
    monkeypatch.setattr(layout, "COMPACT_MIN", 1)  # compact at (almost) every change, rewrite the archive often
    archived = _run(tmp_path / "archived", seed, 160)
    assert (tmp_path / "archived" / "ended.log").exists()
    assert archived == plain


def _ended_session(directory: Path, n: int) -> tuple[Process, list[str]]:
    p = Process(directory)
    ids = [p.send("tools/call", {"name": "quick", "arguments": {}})["result"]["taskId"] for _ in range(n)]
    for tid in ids:  # (quick: one poll, then completed)
        assert [p.send("tasks/get", {"taskId": tid})["result"]["status"] for _ in range(2)] == ["working", "completed"]
    return p, ids


def test_start_up_reads_only_the_log_and_an_archived_task_is_found_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "COMPACT_MIN", 4000)
    _, ids = _ended_session(tmp_path, 30)
    log = (tmp_path / "state.log").read_text()
    archived = [tid for tid in ids if tid not in log]
    assert len(archived) > 20  # most ended tasks left the log
    fresh = Process(tmp_path)
    assert fresh.store.archive.inode is None and not fresh.engine.tasks.raw.keys() & set(archived)
    got = fresh.send("tasks/get", {"taskId": archived[0]})["result"]
    assert got["status"] == "completed" and got["result"]["content"][0]["text"] == "quick result"
    assert fresh.send("tasks/get", {"taskId": "no-such-task"})["error"]["code"] == -32602


def test_a_torn_append_to_the_archive_is_cut_off_before_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "COMPACT_MIN", 4000)
    p, ids = _ended_session(tmp_path, 10)
    archive = tmp_path / "ended.log"
    with archive.open("ab") as fh:
        fh.write(b'D ' + ids[0].encode() + b' {"id":"half')  # a process killed mid-append (its log was kept)
    _, more = _ended_session(tmp_path, 10)  # compacts again: appends after cutting the torn line
    assert b'"half' not in archive.read_bytes()
    fresh = Process(tmp_path)
    assert [fresh.send("tasks/get", {"taskId": t})["result"]["status"] for t in ids + more] == ["completed"] * 20
    assert fresh.store.archive.bad == 0


def test_a_corrupt_archive_is_refused_at_start_up_or_named_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "COMPACT_MIN", 4000)
    _, ids = _ended_session(tmp_path, 10)
    archive = tmp_path / "ended.log"
    good = archive.read_bytes()
    archive.write_bytes(b"something else\n" + good.split(b"\n", 1)[1])
    with pytest.raises(SessionError, match="ended.log: corrupt"):
        Process(tmp_path)
    archive.write_bytes(good + b"Z not a line\n")  # an edited line: found when an id is looked for
    fresh = Process(tmp_path)
    assert fresh.send("tasks/get", {"taskId": ids[0]})["result"]["status"] == "completed"
    error = fresh.send("tasks/get", {"taskId": "no-such-task"})["error"]
    assert error["code"] == -32603 and "unreadable lines" in error["message"]
    assert archive.read_bytes() == good + b"Z not a line\n"  # left as it is


def test_the_archive_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "COMPACT_MIN", 2000)
    monkeypatch.setattr(archive, "MAX_RECORDS", 8)
    _, ids = _ended_session(tmp_path, 60)
    lines = (tmp_path / "ended.log").read_text().split("\n")[1:-1]
    assert len(lines) <= 2 * 8 + 4  # rewritten to the newest 8, then grown by at most about its base again
    fresh = Process(tmp_path)
    assert fresh.send("tasks/get", {"taskId": ids[-1]})["result"]["status"] == "completed"
    assert fresh.send("tasks/get", {"taskId": ids[0]})["error"]["code"] == -32602  # the oldest were forgotten
    assert tasks.MAX_RECORDS == 100_000  # (the in-memory bound is not what this test moved)
    json.loads(lines[-1].split(" ", 2)[2])


def test_a_watched_task_that_ends_and_is_archived_by_another_process_is_still_announced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other process ends the task and compacts it into the archive before this one reads the
    log again: this one never sees the task's last line in the log, yet its stream hears the end."""
    monkeypatch.setattr(layout, "COMPACT_MIN", 1)
    here, there = Process(tmp_path), Process(tmp_path)
    tid = there.send("tools/call", {"name": "forever", "arguments": {}})["result"]["taskId"]
    send_with_tasks(here.conn, 7, "subscriptions/listen", {"notifications": {"taskIds": [tid]}})
    assert there.send("tasks/cancel", {"taskId": tid})["result"]["resultType"] == "complete"
    assert tid not in (tmp_path / "state.log").read_text()  # (compacted into the archive at once)
    assert here.conn.refresh() and here.engine.take_task_changes()
    (note,) = task_notes(here.engine.task_notifications())
    assert note["status"] == "cancelled" and note["taskId"] == tid


def test_the_control_channel_lists_and_names_archived_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process started after compaction lists the session's archived ended tasks (they are
    read only when asked), and an unknown id's hint names the newest of all of them."""
    from mockmcp.scenario import fragments
    from mockmcp.core.control import Control

    monkeypatch.setattr(layout, "COMPACT_MIN", 4000)
    _, ids = _ended_session(tmp_path, 30)
    log = (tmp_path / "state.log").read_text()
    assert [tid for tid in ids if tid not in log]  # some are in the archive only
    fresh = Process(tmp_path)
    control = Control(fresh.engine, fragments)

    def ctl(method: str, **params: Any) -> dict[str, Any]:
        out = control.handle_line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode())
        assert out.response is not None
        return out.response

    listed = ctl("listTasks")["result"]
    assert listed["total"] == len(ids)
    assert sorted(t["taskId"] for t in listed["tasks"]) == sorted(ids)
    assert all(t["status"] == "completed" for t in listed["tasks"])
    assert ids[-1] in ctl("getTask", taskId="no-such-task")["error"]["message"]
