"""A session's verdict carried on from the last one (``judged.json``) instead of judging the whole journal.

The carried-on verdict is a second way to the same report: a differential
test writes random journals in pieces, takes the verdict after each piece as
a process's exit does (saving where it stopped), and compares it with a
judgement of the whole journal at once. Then: an exit does not read again
what an earlier verdict read; an edited scenario (other expectations) is
judged from the journal again.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from support.engines import scenario_engine

from mockmcp.verify import report as sessionreport
from mockmcp.verify.journal import read_journal

SCENARIO = """mockmcp: 1
tools:
  - name: a
  - name: b
expectations:
  - {id: first, method: tools/call, name: a, atLeast: 1, before: second}
  - {id: second, method: tools/call, name: b, after: first}
  - {method: tools/list, exactly: 3}
  - {method: ping, never: true}
  - {method: notifications/cancelled, atMost: 2}
"""


def _expectations(text: str = SCENARIO) -> list[Any]:
    return list(scenario_engine(text).scenario.expectations)


def _records(rng: random.Random, n: int, pids: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        pid = rng.choice(pids)
        r = rng.random()
        if r < 0.6:
            method = rng.choice(["tools/call", "tools/list", "ping", "tasks/get"])
            params = {"name": rng.choice(["a", "b"])} if method == "tools/call" else {}
            out.append({"t": i, "pid": pid, "dir": "in", "message": {"jsonrpc": "2.0", "id": rng.choice([i, str(i)]), "method": method, "params": params}})
        elif r < 0.7:
            out.append({"t": i, "pid": pid, "dir": "in", "message": {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}})
        elif r < 0.8:
            check = rng.choice(["tasks.poll.tooFast", "meta.clientInfo.missing", "no.such.check"])
            out.append({"t": i, "pid": pid, "dir": "finding", "finding": {"check": check, "level": "warning", "text": f"f{i}"}})
        else:
            out.append({"t": i, "pid": pid, "dir": "out", "message": {"jsonrpc": "2.0", "id": i, "result": {}}})
    return out


def _write(path: Path, records: list[dict[str, Any]], torn: bool = False) -> None:
    with path.open("a") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
        if torn:
            fh.write('{"t": 0, "pid": 9, "di')  # a writer killed mid-record (the next line is glued on)


@pytest.mark.parametrize("seed", range(8))
def test_carried_on_verdicts_are_the_whole_journal_s(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    expectations = _expectations()
    journal = tmp_path / "journal.jsonl"
    for piece in range(rng.randint(1, 6)):
        _write(journal, _records(rng, rng.randint(0, 400), [101 + piece, 7]), torn=rng.random() < 0.2)
        got = sessionreport.session_report(str(tmp_path), expectations, save=True)
        whole = sessionreport.judge(read_journal(journal), expectations)
        got.pop("session")
        assert got == whole


def test_an_exit_reads_only_what_was_journalled_since_the_last_verdict(tmp_path: Path) -> None:
    expectations = _expectations()
    journal = tmp_path / "journal.jsonl"
    rng = random.Random(1)
    _write(journal, [{"t": 0, "pid": 1, "dir": "start"}, *_records(rng, 300, [1])])
    before = sessionreport.session_report(str(tmp_path), expectations, save=True)
    saved = json.loads((tmp_path / "judged.json").read_text())
    assert list(saved["offsets"].values()) == [journal.stat().st_size]
    # Rewrite the part already judged (same length, same first line): a verdict that read it again would differ.
    text = journal.read_text()
    head, rest = text.split("\n", 1)
    journal.write_text(head + "\n" + rest.replace('"method": "tools/list"', '"method": "tools/lisp"'))
    after = sessionreport.session_report(str(tmp_path), expectations, save=True)
    assert after["counts"] == before["counts"] and after["expectations"] == before["expectations"]
    edited = _expectations(SCENARIO.replace("exactly: 3", "exactly: 4"))  # another scenario: judged again
    again = sessionreport.session_report(str(tmp_path), edited)
    assert [v["count"] for v in again["expectations"]][2] == 0  # (the edited journal has no tools/list left)


def _processes(tmp_path: Path, text: str, n: int) -> list[Any]:
    from mockmcp.core.connection import Connection
    from mockmcp.sessiondir.connection import SessionConnection
    from mockmcp.sessiondir.store import SessionStore
    from mockmcp.shells.log import StderrLog
    from mockmcp.verify.journal import JournalWriter
    from mockmcp.verify.verifier import attach

    procs = []
    for _ in range(n):
        engine = scenario_engine(text)
        store = SessionStore(str(tmp_path), "x", sessionreport.SavedVerdict())
        store.check(engine)
        conn = SessionConnection(Connection(engine), store)
        hooks = attach(engine, conn, StderrLog("quiet"), journal=JournalWriter(store.journal), session=str(tmp_path))
        procs.append((conn, hooks))
    return procs


def test_a_long_session_s_verdict_is_carried_on_before_any_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """So a rotation (which saves the verdict first) never has much to read in the middle of a request."""
    from support.messages import line, request

    from mockmcp.sessiondir import connection, rotation

    monkeypatch.setattr(rotation, "JOURNAL_JUDGE", 10_000)
    monkeypatch.setattr(connection, "JOURNAL_CHECK", 2_000)
    ((conn, hooks),) = _processes(tmp_path, SCENARIO, 1)
    for n in range(200):
        conn.receive_data(line(request(n, "tools/call", {"name": "a", "arguments": {}})))
        if n == 150:
            assert 0 < (size := (tmp_path / "journal.jsonl").stat().st_size) - sessionreport.judged_offset(str(tmp_path)) <= 10_000 + 4_000
    assert not (tmp_path / "journal.1.jsonl").exists()
    hooks["finish"](0)
    report = sessionreport.session_report(str(tmp_path), _expectations())
    assert report["counts"]["requests"] == 200 and report["expectations"][0]["count"] == 200
    assert size > 20_000


def test_the_session_journal_is_rotated_and_the_verdict_still_counts_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes of a session write past the journal's bound many times: at most about twice
    the bound is kept, and the session's verdict still counts every request of both."""
    from support.messages import line, request

    from mockmcp.sessiondir import connection, rotation

    monkeypatch.setattr(rotation, "JOURNAL_ROTATE", 20_000)
    monkeypatch.setattr(connection, "JOURNAL_CHECK", 2_000)
    text = SCENARIO.replace("exactly: 3", "atLeast: 1")
    procs = _processes(tmp_path, text, 2)
    sent = 0
    sizes = []
    for n in range(600):
        conn, _ = procs[n % 2]
        conn.receive_data(line(request(n, "tools/call", {"name": "a" if n < 300 else "b", "arguments": {}})))
        sent += 1
        sizes.append(sum(p.stat().st_size for p in tmp_path.glob("journal*.jsonl")))
    assert (tmp_path / "journal.1.jsonl").exists()
    assert max(sizes) < 2 * 20_000 + 2 * 2_000 + 4_000  # two files of about the bound, each process at most one check late
    assert sum(sizes) / len(sizes) > 15_000  # (it did grow)
    assert procs[0][0]._store.rotation.generation >= 4  # (and was cut back many times)
    for conn, hooks in procs:
        hooks["finish"](0)
    report = sessionreport.session_report(str(tmp_path), _expectations(text))
    assert report["counts"]["requests"] == sent
    assert [v["verdict"] for v in report["expectations"]] == ["passed", "passed", "failed", "passed", "passed"]
    assert [v["count"] for v in report["expectations"][:2]] == [300, 300]
