"""The journal: one O_APPEND write per record, shared files, torn lines, the transcript."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.messages import line, request

from support.process import mockmcp_cmd, run_mock

from mockmcp.verify.journal import JournalWriter, print_transcript, raw_text, read_journal


def test_records_carry_time_pid_and_direction(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    w = JournalWriter(path)
    w.write("in", message={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    w.write("out", message={"jsonrpc": "2.0", "id": 1, "result": {}}, rule="$.methods[0].replies[0]")
    w.close()
    recs = read_journal(path)
    assert [r["dir"] for r in recs] == ["in", "out"]
    assert all(r["pid"] == os.getpid() for r in recs)
    assert recs[0]["t"] <= recs[1]["t"]
    assert recs[1]["rule"] == "$.methods[0].replies[0]"
    assert path.read_bytes().count(b"\n") == 2


def test_raw_bytes_round_trip(tmp_path: Path) -> None:
    data = bytes(range(256))
    w = JournalWriter(tmp_path / "j.jsonl")
    w.write("in", raw=raw_text(data))
    (rec,) = read_journal(tmp_path / "j.jsonl")
    assert rec["raw"].encode("latin-1") == data


def test_two_writers_append_without_clobbering(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    a, b = JournalWriter(path), JournalWriter(path)
    for i in range(50):
        a.write("in", n=i, who="a")
        b.write("in", n=i, who="b")
    assert len(read_journal(path)) == 100


WRITER = """
import sys
from mockmcp.verify.journal import JournalWriter
w = JournalWriter(sys.argv[1])
for i in range(int(sys.argv[2])):
    w.write("in", n=i, pad="x" * 3000)
"""


def test_two_processes_share_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "400"]) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    recs = read_journal(path)
    assert len(recs) == 800  # every line parses: no record was split by the other writer
    assert len({r["pid"] for r in recs}) == 2


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    JournalWriter(path).write("in", n=1)
    with open(path, "ab") as fh:
        fh.write(b'{"t": 1.0, "pid": 1, "dir": "in", "mess')
    assert len(read_journal(path)) == 1
    out = io.StringIO()
    assert print_transcript(path, color="never", out=out) == 0
    assert "1 unreadable line skipped" in out.getvalue()


def test_sigkill_loses_nothing_already_answered(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    proc = subprocess.Popen(
        mockmcp_cmd("run", "default", "--journal", str(journal)), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin and proc.stdout
    for i in range(1, 4):
        proc.stdin.write(line(request(i, "tools/call", {"name": "echo", "arguments": {"text": str(i)}})))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == i
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdin.close()
    proc.stdout.close()
    recs = read_journal(journal)
    ins = [r["message"]["id"] for r in recs if r["dir"] == "in"]
    outs = [r["message"]["id"] for r in recs if r["dir"] == "out"]
    assert ins == [1, 2, 3] and outs == [1, 2, 3]


def _sample_journal(tmp_path: Path) -> Path:
    journal = tmp_path / "j.jsonl"
    msgs = [
        request(1, "tools/call", {"name": "echo", "arguments": {"text": "hello"}}),
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    res = run_mock("run", "default", "--journal", str(journal), input=b"".join(line(m) for m in msgs) + b"not json\n")
    assert res.returncode == 0, res.stderr
    return journal


def test_transcript_shows_arrows_ids_methods_timings_and_findings(tmp_path: Path) -> None:
    journal = _sample_journal(tmp_path)
    out = io.StringIO()
    assert print_transcript(journal, color="never", out=out) == 0
    text = out.getvalue()
    assert "\x1b[" not in text
    assert '-> #1 tools/call echo {"text": "hello"}' in text
    assert '<- #1 result complete "hello"' in text
    assert " in " in text and "ms" in text  # the time each request took
    assert "!! ERROR removed.ping" in text
    assert "!! ERROR jsonrpc.parse" in text
    assert "(unparsed) not json" in text


def test_transcript_colours_only_when_asked_or_on_a_terminal(tmp_path: Path) -> None:
    journal = _sample_journal(tmp_path)
    out = io.StringIO()
    print_transcript(journal, color="always", out=out)
    assert "\x1b[1;31m" in out.getvalue()  # findings in bold red
    out = io.StringIO()  # not a terminal
    print_transcript(journal, color="auto", out=out)
    assert "\x1b[" not in out.getvalue()


def test_journal_subcommand(tmp_path: Path) -> None:
    journal = _sample_journal(tmp_path)
    res = run_mock("journal", str(journal))
    assert res.returncode == 0
    assert b"tools/call echo" in res.stdout and b"\x1b[" not in res.stdout
    res = run_mock("journal", str(journal), "--color", "always")
    assert b"\x1b[" in res.stdout
    res = run_mock("journal", str(tmp_path / "missing.jsonl"))
    assert res.returncode == 2 and b"missing.jsonl" in res.stderr


def test_exit_fault_keeps_the_journal(tmp_path: Path) -> None:
    scenario = tmp_path / "exit.yaml"
    scenario.write_text(
        "mockmcp: 1\ntools:\n  - name: die\n    inputSchema: {type: object}\n    replies:\n      - steps: [{exit: {status: 3}}]\n"
    )
    journal, report = tmp_path / "j.jsonl", tmp_path / "r.json"
    started = time.monotonic()
    res = run_mock("run", str(scenario), "--journal", str(journal), "--report", str(report),
                   input=line(request(1, "tools/list")) + line(request(2, "tools/call", {"name": "die"})))
    assert res.returncode == 3 and time.monotonic() - started < 30
    recs = read_journal(journal)
    assert [r["message"]["id"] for r in recs if r["dir"] == "in"] == [1, 2]
    assert [r["message"]["id"] for r in recs if r["dir"] == "out"] == [1]
    assert [r for r in recs if r["dir"] == "event"][0]["kind"] == "exit"
    assert not report.exists()  # documented: os._exit leaves no time for the report


def test_two_mock_processes_share_one_journal(tmp_path: Path) -> None:
    journal = tmp_path / "shared.jsonl"
    procs = [
        subprocess.Popen(mockmcp_cmd("run", "default", "--journal", str(journal)), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    payload = b"".join(line(request(i, "tools/call", {"name": "echo", "arguments": {"text": "x" * 2000}})) for i in range(200))
    outs = [p.communicate(payload, timeout=60)[0] for p in procs]
    assert all(out.count(b"\n") == 200 for out in outs)
    recs = read_journal(journal)
    by_pid: dict[int, list[str]] = {}
    for r in recs:
        by_pid.setdefault(r["pid"], []).append(r["dir"])
    assert sorted(by_pid) == sorted(p.pid for p in procs)
    for dirs in by_pid.values():
        assert dirs.count("in") == 200 and dirs.count("out") == 200 and dirs[0] == "start"
    assert journal.read_bytes().count(b"\n") == len(recs)  # no torn or merged lines


def test_a_file_that_is_not_a_journal_is_named_so_and_exits_1(tmp_path: Path) -> None:
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "default.yaml"
    proc = run_mock("journal", str(scenario))
    assert proc.returncode == 1 and proc.stdout == b""
    err = proc.stderr.decode()
    assert f"{scenario} is not a journal" in err and "killed mid-record" not in err
    report = tmp_path / "r.json"
    report.write_text('{"mockmcp": 1,\n "ok": true}\n')  # JSON, but not JSON Lines records
    assert run_mock("journal", str(report)).returncode == 1
    lines = tmp_path / "other.jsonl"
    lines.write_text('{"a": 1}\n{"b": 2}\n')  # JSON Lines without journal records
    assert run_mock("journal", str(lines)).returncode == 1


def test_a_torn_last_line_still_prints_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    JournalWriter(path).write("in", message={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    with open(path, "ab") as fh:
        fh.write(b'{"t": 1.0, "pid": 1, "dir": "ou')
    proc = run_mock("journal", str(path))
    assert proc.returncode == 0
    assert "#1 tools/list" in proc.stdout.decode() and "1 unreadable line skipped" in proc.stdout.decode()


def test_failed_expectations_are_journalled_at_exit(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("mockmcp: 1\ntools: [{name: hi}]\nexpectations: [{id: called, method: tools/call, name: hi}]\n")
    journal = tmp_path / "j.jsonl"
    assert run_mock("run", str(scenario), "--journal", str(journal), input=line(request(1, "tools/list"))).returncode == 0
    (verdict,) = [r for r in read_journal(journal) if r["dir"] == "verdict"]
    assert verdict["verdict"]["expectation"].startswith("called") and verdict["verdict"]["verdict"] == "failed"
    out = io.StringIO()
    print_transcript(journal, color="never", out=out)
    assert "EXPECTATION FAILED called" in out.getvalue()


@pytest.mark.parametrize("kind", ["run", "run --http", "proxy", "record's replay"])
def test_a_journal_that_cannot_be_written_stops_the_start_with_one_line(tmp_path: Path, kind: str) -> None:
    """A folder, or a file in a folder that does not exist: status 2 and the reason, at start-up,
    for every process kind that journals (before: a traceback from the journal's open)."""
    cassette = tmp_path / "c.yaml"
    cassette.write_text("mockmcp: 1\ntools: [{name: hi}]\n")
    server = [sys.executable, "-m", "mockmcp", "run", "default"]
    for target in (tmp_path, tmp_path / "missing" / "j.jsonl"):
        args = {
            "run": ["run", "default", "--journal", str(target)],
            "run --http": ["run", "default", "--http", "127.0.0.1:0", "--journal", str(target)],
            "proxy": ["proxy", "--journal", str(target), "--", *server],
            "record's replay": ["record", "-o", str(cassette), "--journal", str(target), "--", *server],
        }[kind]
        proc = run_mock(*args, timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "Traceback" not in err, err
        assert err.splitlines()[-1].startswith(f"mockmcp: error: --journal: cannot write {target}: "), err
